"""Subcommands of the pointfail CLI, one module each (see ``pointfail.cli``).

``COMMANDS`` is the one list of them: ``pointfail --help`` is built from it without importing any
command module, and ``pointfail COMMAND`` imports only the module it names. A new command is a
module here with ``register(subparsers)`` plus one line in this table (tests/test_cli_help.py checks
that every module registers exactly the commands the table gives it).
"""

__all__ = ["COMMANDS"]

COMMANDS: dict[str, tuple[str, str]] = {
    # command: (module in pointfail.commands, the one line `pointfail --help` shows)
    "aggregate": ("aggregate", "compute every table from a study's records"),
    "verify": ("aggregate", "regenerate the tables and compare them byte for byte with the committed ones"),
    "upgrade-records": ("aggregate", "rewrite a study's schema-version-1 records as version 2 (readings re-derived)"),
    "report": ("aggregate", "failure-profile figures (HTML and PNG), gallery, tolerance curves"),
    "data": ("data", "fetch or check benchmark data"),
    "evaluate": ("evaluate", "from a file of your model's replies to its failure modes, tables, report and browser"),
    "families": ("families", "model families: coordinate frame, example prompt and reply, checkpoints"),
    "generate": ("generate", "generate a synthetic suite (sheets, text, web) or verify one"),
    "judge": ("judge", "label every miss in a study's records with a failure mode (oracle or a model judge)"),
    "judge-one": ("judge", "judge one miss with an Ollama judge and print JSON"),
    "judge-agreement": ("judge", "agreement between any two judges (kappa, alpha, confusion matrix)"),
    "score": ("score", "parse and score one model reply against a mask or box"),
    "score-predictions": (
        "score_predictions",
        "score a PointerBench predictions file (official rules, per-row results and breakdowns)",
    ),
    "show": ("show", "draw a suite sample with its target and scene graph"),
    "view": ("view", "per-sample failure browser of a study (static site; --serve opens it)"),
    "weights-manifest": (
        "weights",
        "sha256 manifest of a weights folder (run right after downloading), or check a folder against one",
    ),
    "weights": ("weights_fetch", "fetch a study model's checkpoint (pinned by the study lock)"),
}

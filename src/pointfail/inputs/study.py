"""The study file, ``records/<study>/study.toml``, read one way by every stage (runner, judge,
aggregate): one validated pydantic model (``shared/DESIGN.md``, "Untrusted input": names in a study
are identifiers, paths stay inside declared roots).

A study file comes from outside and the runner is root, so nothing in it is used as written:

* **Names are identifiers.** The study's, every benchmark's and every model's ``name`` match
  :data:`NAME_PATTERN` (lower-case ASCII letters and digits, then also ``.``, ``_`` and ``-``, at
  most 64 characters; so no ``/``, no ``..``, no leading dot, no upper case to collide on
  case-insensitive disks). Names are unique within their list and not reserved: a model may not be
  called :data:`RESERVED_MODEL_NAMES` (folders and files beside the models in ``records/<study>/``),
  a benchmark not :data:`RESERVED_BENCHMARK_NAMES` (``pooled`` is the tables' pooled row).
* **Paths are relative and stay inside their root.** ``data_dir`` (per benchmark) and ``weights``
  (per model) are relative POSIX paths with no ``..``, ``.`` or empty component; they are joined to
  the declared root (:class:`Roots`: data, weights, work, records, which the operator gives on the
  command line or which default to folders of the checkout) and the *resolved* result must still be
  inside the resolved root, so a symlink in a dataset cannot lead out either.
* **Types and ranges are checked** (strict: ``limit = "5"`` is a type error, not 5); unknown keys are
  errors; ``family`` must be a registered family and ``loader`` a registered benchmark loader.
* **Errors name the file, the key and the rule**, one line per problem, and never a traceback:
  :class:`StudyError`.
* The file itself must be a regular file of at most :data:`MAX_STUDY_BYTES`, in UTF-8.

Models are of a ``kind``: ``"container"`` (the default: a family image run by the runner over job
files) or ``"server"`` (a model behind an OpenAI-compatible endpoint, ``base_url`` + ``model``;
``api_key_env`` names the environment variable holding the key, the key itself is never in the file;
``options`` are the served backend's, :class:`pointfail.running.served.options.ServedOptions`; or, instead of
``base_url``, ``serve``: the runner starts the server as a container, :class:`ServeSpec`).

File layout (``docs/architecture.md``, "Studies")::

    [study]        name, description, primary_judge (a judge kind: oracle, ollama, openai, ...)
    [[benchmarks]] name, loader, generator, n, seed, pages, data_dir, limit, size, revision
    [[models]]     kind, name, family, image, checkpoint, revision, weights, max_new_tokens, batch_size
                   (kind = "server": name, family, base_url | serve, model, api_key_env, options, ...)
    [judge]        oracle_tolerance_px, ollama_model, ollama_digest
    [aggregate]    bootstrap_seed, bootstrap_resamples
"""

from __future__ import annotations

import re
import tomllib
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import Annotated, Any, Literal, Optional, Union

from pydantic import (
    BaseModel,
    ConfigDict,
    Discriminator,
    Field,
    Tag,
    ValidationError,
    field_validator,
    model_validator,
)

from pointfail.limits import MAX_STUDY_BYTES
from pointfail.running.served.options import ServedOptions
from pointfail.safeio import UnsafeFileError, read_regular_file

__all__ = [
    "NAME_PATTERN",
    "RESERVED_MODEL_NAMES",
    "RESERVED_BENCHMARK_NAMES",
    "MAX_STUDY_BYTES",
    "StudyError",
    "StudyInfo",
    "BenchmarkSpec",
    "ContainerModel",
    "ServerModel",
    "ServeSpec",
    "ModelSpec",
    "model_spec",
    "JudgeSpec",
    "AggregateSpec",
    "Study",
    "Roots",
    "load_study",
    "parse_study",
    "inside",
    "safe_relative",
]

NAME_PATTERN = r"^[a-z0-9][a-z0-9._-]{0,63}$"
"""Study, benchmark and model names: they become folder and file names (``records/<study>/<model>/
<benchmark>.jsonl``, ``work/<study>/<model>/<benchmark>/``, ``data/<study>/<benchmark>/``)."""

_NAME = re.compile(NAME_PATTERN)

RESERVED_MODEL_NAMES = frozenset({"tables", "report", "suites", "study.toml"})
"""Names that ``records/<study>/`` already uses beside the model folders."""

RESERVED_BENCHMARK_NAMES = frozenset({"pooled"})
"""``pooled`` is the tables' row that sums every benchmark."""

_COMMIT = re.compile(r"^[0-9a-f]{40}$")
_ENV_VAR = re.compile(r"^[A-Z_][A-Z0-9_]{0,127}$")


class StudyError(ValueError):
    """The study file cannot be used: unreadable, not UTF-8, not TOML, or it breaks a rule. The
    message names the file, then one line per problem: the key (``models[2].name``) and the rule."""


# ------------------------------------------------------------------------------------------- rules


def check_name(value: Any) -> str:
    """``value`` when it matches :data:`NAME_PATTERN`; raises ``ValueError`` saying the rule."""
    if not isinstance(value, str) or not _NAME.fullmatch(value):
        raise ValueError(f"{value!r} is not a name: names match {NAME_PATTERN} (lower-case letters, digits, "
                         "'.', '_', '-'; starting with a letter or digit; at most 64 characters)")
    return value


def safe_relative(value: Any) -> str:
    """``value`` when it is a relative POSIX path with no empty, ``.`` or ``..`` component, no
    backslash and no NUL (at most 512 characters); raises ``ValueError`` saying the rule. Where it
    ends up is checked again after resolving symlinks (:func:`inside`)."""
    if not isinstance(value, str) or not value or len(value) > 512:
        raise ValueError(f"{value!r} is not a relative path (1-512 characters)")
    if "\x00" in value or "\\" in value or any(ord(c) < 32 for c in value):
        raise ValueError(f"{value!r}: control characters and backslashes are not allowed in paths")
    if value.startswith("/") or PurePosixPath(value).is_absolute():
        raise ValueError(f"{value!r} is absolute: paths in a study are relative to their declared root")
    parts = value.split("/")
    if any(p in ("", ".", "..") for p in parts):
        raise ValueError(f"{value!r} has an empty, '.' or '..' component: paths may not leave their root")
    return value


def check_url(value: str) -> str:
    """``value`` when it is an ``http://`` or ``https://`` URL; raises ``ValueError`` otherwise."""
    if not re.fullmatch(r"https?://[^\s/?#]+(?:/[^\s]*)?", value):
        raise ValueError(f"{value!r} is not an http(s) URL")
    return value


def check_env_name(value: Optional[str]) -> Optional[str]:
    """``value`` when it is ``None`` or an environment variable name (``[A-Z_][A-Z0-9_]*``)."""
    if value is not None and not _ENV_VAR.fullmatch(value):
        raise ValueError(f"{value!r} is not an environment variable name ([A-Z_][A-Z0-9_]*)")
    return value


Name = Annotated[str, Field(strict=True)]


def check_judge_kind(value: str) -> str:
    """A judge kind of the judge registry (:mod:`pointfail.running.judges.kinds`) that the runner can run from
    a study file (not ``human``: human labels come from ``pointfail judge --judge human --labels``).

    Raises:
        ValueError: any other name (the known ones listed)."""
    from pointfail.running.judges.kinds import get_kind, list_kinds

    try:
        if get_kind(value).runs_in_study:  # enters that kind's module only
            return value
    except KeyError:
        pass
    ok = [k.name for k in list_kinds() if k.runs_in_study]
    if value not in ok:
        raise ValueError(f"unknown judge {value!r} for a study file (known: {', '.join(ok)})")
    return value
RelPath = Annotated[str, Field(strict=True)]


class _Spec(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True, frozen=True)


class StudyInfo(_Spec):
    """``[study]``: ``name`` (an identifier; also the folder name under ``data/`` and ``work/``), a
    free-text ``description`` and the ``primary_judge`` (a kind of the judge registry,
    :mod:`pointfail.running.judges.kinds`: ``oracle``, ``ollama``, ``openai``, ...) whose labels fill the tables."""

    name: Name
    description: str = Field(default="", max_length=4000)
    primary_judge: str = Field(default="oracle", max_length=64)

    @field_validator("name")
    @classmethod
    def _valid_name(cls, v: str) -> str:
        return check_name(v)

    @field_validator("primary_judge")
    @classmethod
    def _judge(cls, v: str) -> str:
        return check_judge_kind(v)


class BenchmarkSpec(_Spec):
    """``[[benchmarks]]``: one benchmark of the study.

    ``name`` (identifier, the records file name), ``loader`` (a key of
    ``pointfail.inputs.benchmarks.benchmarks()``), for generated suites ``generator`` (sheets | text | web),
    ``n`` (samples, 1-100000) and ``seed`` (>= 0), ``absent_share`` (0-1: rows whose referent is not on
    the screen) and, for web, ``pages``; ``data_dir`` (relative to
    the data root; default: the benchmark's name); ``limit`` (first N samples, >= 1); ``size`` (the
    documented sample count, informative); ``revision`` (a dataset revision, informative)."""

    name: Name
    loader: str
    generator: Optional[Literal["sheets", "text", "web"]] = None
    n: Optional[int] = Field(default=None, ge=1, le=100_000)
    seed: Optional[int] = Field(default=None, ge=0, le=2**63 - 1)
    pages: Optional[str] = Field(default=None, max_length=200)
    data_dir: Optional[RelPath] = None
    limit: Optional[int] = Field(default=None, ge=1, le=10_000_000)
    size: Optional[int] = Field(default=None, ge=0, le=10_000_000)
    revision: Optional[str] = Field(default=None, max_length=200)
    absent_share: Optional[float] = Field(default=None, ge=0, le=1, allow_inf_nan=False)

    @field_validator("data_dir")
    @classmethod
    def _relative(cls, v: Optional[str]) -> Optional[str]:
        return None if v is None else safe_relative(v)

    @field_validator("name")
    @classmethod
    def _not_reserved(cls, v: str) -> str:
        check_name(v)
        if v in RESERVED_BENCHMARK_NAMES:
            raise ValueError(f"{v!r} is reserved (the tables' pooled row); choose another benchmark name")
        return v

    @field_validator("loader")
    @classmethod
    def _known_loader(cls, v: str) -> str:
        from pointfail.inputs.benchmarks import benchmarks

        known = benchmarks()
        if v not in known:
            raise ValueError(f"unknown loader {v!r}; known: {', '.join(sorted(known))}")
        return v

    @model_validator(mode="after")
    def _generated_needs_n_and_seed(self) -> "BenchmarkSpec":
        if self.generator is not None and (self.n is None or self.seed is None):
            raise ValueError(f"benchmark {self.name!r}: a generated suite needs n and seed")
        if self.generator is not None and self.loader != "suite":
            raise ValueError(f"benchmark {self.name!r}: a generated suite is loaded with loader = \"suite\"")
        return self


def _known_family(v: str) -> str:
    from pointfail.families import get_family

    try:
        get_family(v)
    except KeyError as e:
        raise ValueError(str(e).strip("'\"")) from None
    return v


class _ModelBase(_Spec):
    name: Name
    family: str
    lineage: list[Annotated[str, Field(min_length=1, max_length=64)]] = Field(default_factory=list, max_length=32)
    """Model lines this model derives from beyond its family's (``Family.lineage``), for the
    out-of-family judge check (:mod:`pointfail.running.judges.lineage`)."""
    max_new_tokens: int = Field(default=128, ge=1, le=32_768)
    batch_size: int = Field(default=1, ge=1, le=4096)

    @field_validator("family")
    @classmethod
    def _family_known(cls, v: str) -> str:
        return _known_family(v)

    @field_validator("name")
    @classmethod
    def _not_reserved(cls, v: str) -> str:
        check_name(v)
        if v in RESERVED_MODEL_NAMES:
            raise ValueError(f"{v!r} is reserved (records/<study>/{v} is not a model folder); choose another name")
        return v


class ContainerModel(_ModelBase):
    """``[[models]]`` with ``kind = "container"`` (the default): a family image run by the runner.

    ``image`` names ``images/<image>/`` (an identifier); ``checkpoint`` the hub id (informative);
    ``revision`` empty or a full 40-hex commit; ``weights`` relative to the weights root (default:
    the model's name); ``weights_manifest`` (relative to the study's folder) the sha256 manifest of
    the weights taken at download time, required for families that run the checkpoint's own code
    (Molmo v1); ``max_new_tokens`` 1-32768 (default 128); ``batch_size`` 1-4096 (default 1)."""

    kind: Literal["container"] = "container"
    image: Name
    checkpoint: str = Field(default="", max_length=200)
    revision: str = ""
    weights: Optional[RelPath] = None
    weights_manifest: Optional[RelPath] = None

    @field_validator("image")
    @classmethod
    def _image_name(cls, v: str) -> str:
        return check_name(v)

    @field_validator("weights", "weights_manifest")
    @classmethod
    def _relative(cls, v: Optional[str]) -> Optional[str]:
        return None if v is None else safe_relative(v)

    @field_validator("revision")
    @classmethod
    def _commit(cls, v: str) -> str:
        if v and not _COMMIT.fullmatch(v):
            raise ValueError(f"{v!r} is not a full 40-hex commit id (branches and tags move); leave it empty "
                             "until it is pinned")
        return v


class ServeSpec(_Spec):
    """``serve`` of a ``kind = "server"`` model: the runner starts the server itself, as a container of the
    family image's serving variant, instead of talking to one at ``base_url``.

    ``engine``: ``"vllm"`` (the image's ``vllm`` variant, on the GPU: ``vllm serve``) or
    ``"transformers"`` (``transformers serve``, CPU or GPU; the image must carry the serving extra);
    ``image`` names ``images/<image>/`` (an identifier); ``weights`` the checkpoint folder relative to
    the weights root (default: the model's name), mounted read-only; ``args``: extra server arguments
    (at most 64, each at most 400 characters), e.g. ``["--max-model-len", "8192"]``; ``startup_s``:
    seconds to wait for the server's ``/health`` (default 1800: a first vLLM start compiles kernels).

    The server container runs on an internal Docker network (no route out), read-only, non-root, all
    capabilities dropped; the runner reaches it at its address on that network and removes container
    and network when the model's jobs end (``pointfail_runner.serving``)."""

    engine: Literal["vllm", "transformers"]
    image: Name
    weights: Optional[RelPath] = None
    args: list[Annotated[str, Field(max_length=400)]] = Field(default_factory=list, max_length=64)
    startup_s: float = Field(default=1800.0, gt=0, le=86_400, allow_inf_nan=False)

    @field_validator("image")
    @classmethod
    def _image_name(cls, v: str) -> str:
        return check_name(v)

    @field_validator("weights")
    @classmethod
    def _relative(cls, v: Optional[str]) -> Optional[str]:
        return None if v is None else safe_relative(v)

    @field_validator("args")
    @classmethod
    def _printable(cls, v: list[str]) -> list[str]:
        for a in v:
            if any(ord(c) < 32 or ord(c) == 127 for c in a):
                raise ValueError(f"{a!r}: control characters are not allowed in server arguments")
        return v


class ServerModel(_ModelBase):
    """``[[models]]`` with ``kind = "server"``: a model behind an OpenAI-compatible endpoint.

    ``base_url`` (``http://`` or ``https://``) of a server that is already running, or ``serve`` (a
    :class:`ServeSpec`: the runner starts one), exactly one of the two; ``model`` (the served model's
    name; with ``serve``, the name the runner gives it, default the model's ``name``); ``api_key_env``
    (the *name* of the environment variable holding the key, ``[A-Z_][A-Z0-9_]*``; the key is never in
    the file); ``checkpoint``/``revision`` informative as for containers; ``options`` the served
    backend's options, validated here as :class:`pointfail.running.served.options.ServedOptions` and checked
    against the family (a preset or structured output the family cannot take is an error at load)."""

    kind: Literal["server"]
    base_url: Optional[str] = Field(default=None, max_length=2000)
    model: Optional[str] = Field(default=None, min_length=1, max_length=400)
    api_key_env: Optional[str] = None
    checkpoint: str = Field(default="", max_length=200)
    revision: str = Field(default="", max_length=200)
    options: ServedOptions = Field(default_factory=ServedOptions)
    serve: Optional[ServeSpec] = None

    @field_validator("base_url")
    @classmethod
    def _url(cls, v: Optional[str]) -> Optional[str]:
        return None if v is None else check_url(v)

    @field_validator("api_key_env")
    @classmethod
    def _env(cls, v: Optional[str]) -> Optional[str]:
        return check_env_name(v)

    @model_validator(mode="before")
    @classmethod
    def _served_name(cls, data: Any) -> Any:
        # a server the runner starts serves the model under the model's own name unless told otherwise
        if isinstance(data, dict) and data.get("serve") is not None and data.get("model") is None:
            data = {**data, "model": data.get("name")}
        return data

    @model_validator(mode="after")
    def _endpoint_and_options(self) -> "ServerModel":
        from pointfail.families import get_family

        if (self.base_url is None) == (self.serve is None):
            raise ValueError("give base_url (a running server) or serve (the runner starts one), exactly one of "
                             "them")
        if self.model is None:
            raise ValueError("model (the name the server knows the model by) is required with base_url")
        self.options.for_family(get_family(self.family).name)  # ValueError: preset/structured vs family
        return self


def _model_kind(v: Any) -> str:
    if isinstance(v, dict):
        return v.get("kind", "container")
    return getattr(v, "kind", "container")


ModelSpec = Annotated[
    Union[Annotated[ContainerModel, Tag("container")], Annotated[ServerModel, Tag("server")]],
    Discriminator(_model_kind, custom_error_type="model_kind",
                  custom_error_message="kind must be \"container\" or \"server\""),
]


class JudgeSpec(_Spec):
    """``[judge]``: ``oracle_tolerance_px`` (>= 0, default 8), ``ollama_model`` and ``ollama_digest``;
    for an OpenAI-compatible judge ``openai_base_url`` (http(s)), ``openai_model`` and
    ``openai_api_key_env`` (the name of the variable holding the key); ``compared`` (judges run
    besides ``[study] primary_judge``, filling ``other_judgments``), ``lineage`` (the model judge's
    model lines, required with a model judge) and ``allow_in_lineage`` (a judge sharing a lineage with
    an evaluated model is refused unless true; the tables say so): :mod:`pointfail.running.judges.lineage`."""

    oracle_tolerance_px: float = Field(default=8.0, ge=0, le=10_000, allow_inf_nan=False)
    ollama_model: Optional[str] = Field(default=None, max_length=200)
    ollama_digest: Optional[str] = Field(default=None, max_length=200)
    openai_base_url: Optional[str] = Field(default=None, max_length=2000)
    openai_model: Optional[str] = Field(default=None, max_length=400)
    openai_api_key_env: Optional[str] = None
    compared: list[Annotated[str, Field(max_length=64)]] = Field(default_factory=list, max_length=8)
    lineage: list[Annotated[str, Field(min_length=1, max_length=64)]] = Field(default_factory=list, max_length=32)
    allow_in_lineage: bool = False

    @field_validator("compared")
    @classmethod
    def _judges(cls, v: list[str]) -> list[str]:
        return [check_judge_kind(x) for x in v]

    @field_validator("openai_base_url")
    @classmethod
    def _url(cls, v: Optional[str]) -> Optional[str]:
        return None if v is None else check_url(v)

    @field_validator("openai_api_key_env")
    @classmethod
    def _env(cls, v: Optional[str]) -> Optional[str]:
        return check_env_name(v)


class StandInSpec(_Spec):
    """``[stand_in]`` (rehearsal studies only): ``hub`` (a stand-in hub folder of the checkout,
    :func:`pointfail.generated.testing.hub.load_catalog`) and ``judge`` (``"ollama"``: the scripted Ollama-API
    server); reproduce starts them on loopback for the run (``pointfail_runner.prepare.stand_ins``)."""

    hub: Optional[RelPath] = None
    judge: Optional[Literal["ollama"]] = None

    @field_validator("hub")
    @classmethod
    def _relative(cls, v: Optional[str]) -> Optional[str]:
        return None if v is None else safe_relative(v)


class AggregateSpec(_Spec):
    """``[aggregate]``: ``bootstrap_seed`` (>= 0, default 0), ``bootstrap_resamples`` (1-1000000,
    default 1000), ``notes`` (lines every table of the study carries)."""

    bootstrap_seed: int = Field(default=0, ge=0, le=2**63 - 1)
    bootstrap_resamples: int = Field(default=1000, ge=1, le=1_000_000)
    notes: list[str] = Field(default_factory=list, max_length=100)


class Study(_Spec):
    """A validated study file (see the module docstring). ``path`` is the file it was read from
    (``None`` when parsed from text); ``dir`` its folder."""

    study: StudyInfo
    benchmarks: list[BenchmarkSpec] = Field(default_factory=list)
    models: list[ModelSpec] = Field(default_factory=list)
    judge: JudgeSpec = Field(default_factory=JudgeSpec)
    stand_in: Optional[StandInSpec] = None
    aggregate: AggregateSpec = Field(default_factory=AggregateSpec)
    path: Optional[Path] = Field(default=None, exclude=True, strict=False)

    @model_validator(mode="after")
    def _unique(self) -> "Study":
        problems = []
        for what, items in (("benchmarks", self.benchmarks), ("models", self.models)):
            seen: dict[str, int] = {}
            for i, it in enumerate(items):
                if it.name in seen:
                    problems.append(f"{what}[{i}].name: {it.name!r} is used twice (also {what}[{seen[it.name]}]); "
                                    "names must be unique")
                seen.setdefault(it.name, i)
        if problems:
            raise ValueError("; ".join(problems))
        return self

    @property
    def name(self) -> str:
        """The study's name (``[study] name``)."""
        return self.study.name

    @property
    def file(self) -> Path:
        """The study file this study was loaded from. Raises :class:`StudyError` for a study parsed
        from text without a path (:func:`parse_study`), which has no file to name."""
        if self.path is None:
            raise StudyError(f"study {self.name} was not loaded from a file")
        return self.path

    @property
    def dir(self) -> Optional[Path]:
        """The folder of the study file (``records/<study>``), or ``None``."""
        return self.path.parent if self.path is not None else None

    def benchmark(self, name: str) -> BenchmarkSpec:
        """The benchmark called ``name``. Raises :class:`StudyError` naming the known ones."""
        return self.select_benchmarks([name])[0]

    def model(self, name: str) -> Union[ContainerModel, ServerModel]:
        """The model called ``name``. Raises :class:`StudyError` naming the known ones."""
        return self.select_models([name])[0]

    def select_models(self, names: Optional[list[str]] = None) -> list[Union[ContainerModel, ServerModel]]:
        """The models called ``names`` in that order (all of them, in study order, for ``None`` or
        an empty list). Raises :class:`StudyError` on an unknown name."""
        return _select(self.models, names, "model", self)

    def select_benchmarks(self, names: Optional[list[str]] = None) -> list[BenchmarkSpec]:
        """As :meth:`select_models`, for benchmarks."""
        return _select(self.benchmarks, names, "benchmark", self)


def _select(items: list, names: Optional[list[str]], what: str, study: Study) -> list:
    if not names:
        return list(items)
    known = {i.name: i for i in items}
    unknown = [n for n in names if n not in known]
    if unknown:
        where = f"{study.path}: " if study.path else ""
        raise StudyError(f"{where}unknown {what}(s) {', '.join(map(repr, unknown))}; the study has: "
                         f"{', '.join(known) or '(none)'}")
    return [known[n] for n in names]


# ------------------------------------------------------------------------------------------ loading


def _loc(loc: tuple) -> str:
    out = ""
    for part in loc:
        if isinstance(part, int):
            out += f"[{part}]"
        elif part in ("container", "server", "function-after[_unique(), Study]"):
            continue  # the union's tag and validator names are not keys of the file
        else:
            out += ("." if out else "") + str(part)
    return out or "(top level)"


def _short(v: Any) -> str:
    r = repr(v)
    return r if len(r) <= 80 else r[:77] + "..."


def _problems(e: ValidationError) -> list[str]:
    out = []
    for err in e.errors(include_url=False):
        msg = err.get("msg", "invalid")
        msg = msg.removeprefix("Value error, ")
        line = f"{_loc(tuple(err.get('loc', ())))}: {msg}"
        if err.get("type") == "model_kind" and isinstance(err.get("input"), dict):
            line += f" (got {_short(err['input'].get('kind'))})"
        elif err.get("type") not in ("value_error", "missing", "extra_forbidden") and "input" in err:
            line += f" (got {_short(err['input'])})"
        if err.get("type") == "extra_forbidden":
            line = f"{_loc(tuple(err.get('loc', ())))}: unknown key (not part of the study format)"
        out.append(line)
    return out


def parse_study(text: str, path: Optional[Path] = None) -> Study:
    """Validate study TOML ``text`` (``path`` only names it in errors and is kept on the result).

    Raises:
        StudyError: invalid TOML or any rule of the module docstring (every problem on its own line).
    """
    where = str(path) if path is not None else "<study>"
    try:
        raw = tomllib.loads(text)
    except tomllib.TOMLDecodeError as e:
        raise StudyError(f"{where}: not valid TOML: {e}") from None
    if "study" not in raw:
        raise StudyError(f"{where}:\n  study: missing [study] table with a name")
    try:
        return Study.model_validate({**raw, "path": path})
    except ValidationError as e:
        raise StudyError(f"{where}:\n  " + "\n  ".join(_problems(e))) from None


def model_spec(table: dict[str, Any], where: str = "<model>") -> Union[ContainerModel, ServerModel]:
    """Validate one ``[[models]]`` table on its own, by the same rules as in a study file (for tools that
    take a model's settings from the command line, e.g. ``python -m pointfail.running.served``).

    Raises:
        StudyError: ``where`` and every problem, one per line.
    """
    from pydantic import TypeAdapter

    try:
        return TypeAdapter(ModelSpec).validate_python(table)
    except ValidationError as e:
        raise StudyError(f"{where}:\n  " + "\n  ".join(_problems(e))) from None


def load_study(path: Union[str, Path]) -> Study:
    """Read and validate a study file (a regular file of at most :data:`MAX_STUDY_BYTES`, UTF-8).

    Raises:
        StudyError: the file is missing, not a regular file (a FIFO or device is refused before it is
            read), too large, not UTF-8, not TOML, or breaks a rule (every problem named).
    """
    p = Path(path)
    try:
        data = read_regular_file(p, MAX_STUDY_BYTES)
    except UnsafeFileError as e:
        raise StudyError(f"study file {e}") from None
    except OSError as e:
        raise StudyError(f"cannot read study file {p}: {e.strerror or e}") from None
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as e:
        raise StudyError(f"{p}: not UTF-8 (byte {e.start}: {data[e.start:e.start + 1]!r})") from None
    return parse_study(text, p)


# -------------------------------------------------------------------------------------------- roots


def inside(root: Path, relative: Union[str, Path], what: str) -> Path:
    """``root / relative`` with every symlink resolved, checked to be ``root`` (resolved) or below it.

    Raises:
        StudyError: the resolved path leaves ``root`` (``what`` names it in the message).
    """
    r = Path(root).resolve()
    p = (r / relative).resolve()
    if p != r and not p.is_relative_to(r):
        raise StudyError(f"{what}: {r / relative} resolves to {p}, outside its root {r}")
    return p


@dataclass(frozen=True)
class Roots:
    """The declared roots every study path is resolved in (absolute, symlinks resolved):

    ``data``: benchmark data (default ``<repo>/data/<study>``); ``weights``: model weights (default
    ``<repo>/weights``); ``work``: job folders (default ``<repo>/work/<study>``); ``records``: records
    (default the study file's folder)."""

    data: Path
    weights: Path
    work: Path
    records: Path

    @classmethod
    def for_study(cls, study: Study, repo: Union[str, Path], *, data: Optional[Path] = None,
                  weights: Optional[Path] = None, work: Optional[Path] = None,
                  records: Optional[Path] = None) -> "Roots":
        """The roots for ``study`` in checkout ``repo``: each given one (relative to the current
        directory), else its default (see the class)."""
        repo = Path(repo).resolve()
        if records is None and study.dir is None:
            raise StudyError("a study parsed from text has no folder: give the records root")
        return cls(
            data=Path(data or repo / "data" / study.name).resolve(),
            weights=Path(weights or repo / "weights").resolve(),
            work=Path(work or repo / "work" / study.name).resolve(),
            records=Path(records or study.dir).resolve(),  # type: ignore[arg-type]
        )

    def data_dir(self, bench: BenchmarkSpec) -> Path:
        """The benchmark's data folder: ``data/<data_dir or name>``, resolved, inside the data root."""
        return inside(self.data, bench.data_dir or bench.name, f"benchmarks {bench.name!r} data_dir")

    def weights_dir(self, model: Union[ContainerModel, "ServerModel"]) -> Path:
        """The model's weights folder: ``weights/<weights or name>`` (for a served model whose server
        the runner starts, ``weights/<serve.weights or name>``), resolved, inside the weights root."""
        if isinstance(model, ServerModel):
            if model.serve is None:
                raise StudyError(f"models {model.name!r}: a server at base_url has no weights folder here")
            return inside(self.weights, model.serve.weights or model.name, f"models {model.name!r} serve.weights")
        return inside(self.weights, model.weights or model.name, f"models {model.name!r} weights")

    def job_dir(self, model: Any, bench: BenchmarkSpec) -> Path:
        """``work/<model>/<benchmark>``, inside the work root."""
        return inside(self.work, f"{model.name}/{bench.name}", f"job folder of {model.name}/{bench.name}")

    def records_file(self, model: Any, bench: BenchmarkSpec) -> Path:
        """``records/<model>/<benchmark>.jsonl``, inside the records root."""
        return inside(self.records, f"{model.name}/{bench.name}.jsonl", f"records of {model.name}/{bench.name}")

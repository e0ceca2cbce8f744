"""PaliGemma: ``<locYYYY>`` tokens, y before x, 1024 bins.

Convention (PaliGemma model card / big_vision docs): detection answers are four location tokens
``<loc{ymin}><loc{xmin}><loc{ymax}><loc{xmax}> label``, each a 4-digit bin index 0–1023 of the image
height or width (1024 bins), several detections separated by `` ; ``. A run of two tokens
``<loc{y}><loc{x}>`` is a point. Bins convert to their centres (see :mod:`pointfail.frames`). A run
of another length is ``wrong_arity`` (runs of 8, 12, … are several boxes). Prompt: the ``detect``
task prefix for both tasks (PaliGemma has no pointing prefix; the box centre is the point).
"""

from __future__ import annotations

from pointfail.families._loc import LocTokenFamily, read_loc_runs
from pointfail.frames import Frame

__all__ = ["PaliGemma", "FAMILY", "read_loc_runs"]


class PaliGemma(LocTokenFamily):
    """PaliGemma <locNNNN> detection tokens, 1024 bins, y first."""

    name = "paligemma"
    frame = Frame("bins_1024_yx", "bins", 1024, "yx", "1024 bins per axis, y before x (PaliGemma <loc> tokens)")
    checkpoints = ("google/paligemma-3b-mix-448", "google/paligemma2-3b-mix-448")
    backend = None
    point_prompt = "detect {target}"
    box_prompt = "detect {target}"
    loc_pattern = r"<loc(\d{1,4})>"
    loc_token = "<loc{:04d}>"
    label_template = "{tokens} target"


FAMILY = PaliGemma()

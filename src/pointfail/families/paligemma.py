"""PaliGemma: ``<locYYYY>`` tokens, y before x, 1024 tokens per axis (n/1023).

Convention (PaliGemma model card; Google's big_vision PaliGemma code): detection answers are four
location tokens ``<loc{ymin}><loc{xmin}><loc{ymax}><loc{xmax}> label``, each a 4-digit index 0–1023,
several detections separated by `` ; ``. A run of two tokens ``<loc{y}><loc{x}>`` is a point. A run of
another length is ``wrong_arity`` (runs of 8, 12, … are several boxes). Prompt: the ``detect`` task
prefix for both tasks (PaliGemma has no pointing prefix; the box centre is the point).

Token values follow the authors' rule both ways (frame kind ``bin_index``, :mod:`pointfail.frames`):
big_vision writes a normalized coordinate ``v`` as ``<loc{round(v * 1023)}>`` and reads ``<locN>``
back as ``N / 1023`` of the image side, so ``<loc0000>`` is the top/left edge and ``<loc1023>`` the
bottom/right edge. Worked case: ``<loc0512><loc0256>`` on a 3840x2160 image is
``x = 256 / 1023 * 3840 = 960.94`` px, ``y = 512 / 1023 * 2160 = 1081.06`` px (a bin-centre reading,
``(256 + 0.5) / 1024 * 3840 = 961.88`` px, would be 0.94 px off; at ``<loc0000>`` and ``<loc1023>`` the gap is 1.875 px).

Declining: the prompt is task tokens only and cannot carry an instruction, and the model's own way of
saying "nothing here" is an answer with no location tokens (``declines_by_silence``); such a reply,
empty or text only, parses as ``reason == "declined"``.
"""

from __future__ import annotations

from pointfail.families._loc import LocTokenFamily, read_loc_runs
from pointfail.frames import Frame

__all__ = ["PaliGemma", "FAMILY", "read_loc_runs"]


class PaliGemma(LocTokenFamily):
    """PaliGemma <locNNNN> detection tokens, n/1023 of the side, y first."""

    name = "paligemma"
    lineage = ("gemma", "paligemma")  # PaliGemma is built on Gemma
    frame = Frame("loc_1024_yx", "bin_index", 1024, "yx",
                  "<loc0000>..<loc1023> = n/1023 of the side, y before x (PaliGemma, big_vision)")
    checkpoints = ("google/paligemma-3b-mix-448", "google/paligemma2-3b-mix-448")
    backend = None
    point_prompt = "detect {target}"
    box_prompt = "detect {target}"
    # prompted with task tokens only: no room for an instruction; declines by giving no location
    decline_prompt = None
    declines_by_silence = True
    loc_pattern = r"<loc(\d{1,4})>"
    loc_token = "<loc{:04d}>"
    label_template = "{tokens} target"


FAMILY = PaliGemma()

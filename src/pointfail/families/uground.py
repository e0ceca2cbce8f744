"""UGround: ``(x, y)`` on a 0–1000 grid.

Convention (UGround paper, arXiv:2410.05243, and the UGround-V1 model cards, Qwen2-VL based): the
prompt asks for "a single string (x, y) corresponding to the point of the interest" and the answer is
``(x, y)`` with integers scaled to 0–1000 of the screenshot. Read with the after-prose rule on
parenthesized groups.
"""

from __future__ import annotations

from pointfail.families import Family
from pointfail.families._text import read_bare_groups
from pointfail.frames import Frame

PROMPT = (
    "Your task is to help the user identify the precise coordinates (x, y) of a specific area/element/object "
    "on the screen based on a description.\n"
    "- Your response should aim to point to the center or a representative point within the described "
    "area/element/object as accurately as possible.\n"
    "- If the description is unclear or ambiguous, infer the most relevant area or element based on the "
    "screenshot context.\n"
    "- Your answer should be a single string (x, y) corresponding to the point of the interest.\n\n"
    "Description: {core}\n\nAnswer:"
)


class UGround(Family):
    """UGround (x, y), 0-1000 grid."""

    name = "uground"
    lineage = ("qwen", "uground")  # UGround-V1 is built on Qwen2-VL
    frame = Frame("grid_1000", "grid", 1000, "xy", "0-1000 grid of the screenshot (UGround-V1)")
    checkpoints = ("osunlp/UGround-V1-2B", "osunlp/UGround-V1-7B", "osunlp/UGround-V1-72B")
    backend = None
    point_prompt = PROMPT
    box_prompt = PROMPT

    def extract(self, text, diag):
        return read_bare_groups(text, diag, "(", ")", ((2, "point"),))

    def format_point(self, x, y, image_size, model_input_size=None):
        fx, fy = self._frame_values(x, y, image_size, model_input_size)
        return f"({fx}, {fy})"


FAMILY = UGround()

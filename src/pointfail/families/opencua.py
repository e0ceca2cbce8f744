"""OpenCUA: ``pyautogui.click(x=…, y=…)`` in absolute pixels of the *resized* model input.

Convention (OpenCUA paper, arXiv:2508.09123, and the OpenCUA-7B model card, Qwen2.5-VL based): the
model answers with pyautogui code, ``pyautogui.click(x=1432, y=360)``, in pixels of the
``smart_resize``'d image (the card converts back with the resized size), so conversion needs
``Response.model_input_size``. Every ``pyautogui.<action>(…)`` call with ``x=``/``y=`` keywords or two
positional numbers gives a point, in order. Prompt: the OpenCUA grounding system prompt and the
instruction.
"""

from __future__ import annotations

import re

from pointfail.families import Family
from pointfail.families._text import Item, split_tokens, tag_attributes
from pointfail.frames import SMART_RESIZE_DEFAULTS, Frame

SYSTEM = (
    "You are a GUI agent. You are given a task and a screenshot of the screen. "
    "You need to perform a series of pyautogui actions to complete the task."
)
_CALL = re.compile(r"pyautogui\.(\w+)\(([^()]*)\)", re.I)


class OpenCUA(Family):
    """OpenCUA pyautogui calls, resized-input pixels."""

    name = "opencua"
    lineage = ("opencua", "qwen")  # OpenCUA is built on Qwen2.5-VL
    frame = Frame("pixels_resized", "pixels_resized", None, "xy", "absolute pixels of the smart_resize'd model input")
    checkpoints = ("xlangai/OpenCUA-7B", "xlangai/OpenCUA-32B")
    # the OpenCUA model card converts with smart_resize(factor=28, min_pixels=3136, max_pixels=12845056)
    resize = SMART_RESIZE_DEFAULTS["qwen2_5_vl"]
    backend = None
    system_prompt = SYSTEM
    point_prompt = SYSTEM + "\n\n{core}"
    box_prompt = point_prompt

    def extract(self, text, diag):
        items = []
        for m in _CALL.finditer(text):
            args = m.group(2)
            kw = tag_attributes(args)
            if "x" in kw or "y" in kw:
                if "x" in kw and "y" in kw:
                    items.append(Item("point", [kw["x"], kw["y"]], m.start(), m.group(0)))
                else:
                    diag.ignore("wrong_arity", m.group(0))
                continue
            pos = [t for t in split_tokens(args) if "=" not in t]
            if len(pos) >= 2:
                items.append(Item("point", pos[:2], m.start(), m.group(0)))
        return items

    def format_point(self, x, y, image_size, model_input_size=None):
        fx, fy = self._frame_values(x, y, image_size, model_input_size)
        return f"## Action:\nClick the target.\n\n## Code:\n```python\npyautogui.click(x={fx}, y={fy})\n```"


FAMILY = OpenCUA()

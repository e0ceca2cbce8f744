"""GTA1: ``(x, y)`` in absolute pixels of the *resized* model input.

Convention (GTA1 paper, arXiv:2507.05791, and the GTA1 model cards, Qwen2.5-VL based): the system
prompt states the resized image's width and height and asks for "a single (x,y) point"; the answer
``(x,y)`` is in pixels of the ``smart_resize``'d image, so conversion needs
``Response.model_input_size``. :meth:`GTA1.prompt` can take that size to fill in the resolution
sentence; without it the sentence is left out.

Resize setting (:attr:`GTA1.resize`): the GTA1 model cards load the processor with
``min_pixels=3136, max_pixels=4096 * 2160`` (factor 28), not Qwen2.5-VL's ``max_pixels=12845056``.
Worked case: a 5120x2880 screenshot is resized to 3948x2212 (``beta = sqrt(5120 * 2880 / 8847360) =
1.2910``; ``floor(5120 / 1.2910 / 28) * 28 = 3948``, ``floor(2880 / 1.2910 / 28) * 28 = 2212``), so
``(1974,1106)`` is the centre of the screen; under Qwen2.5-VL's setting (4760x2688) the same answer
would land at ``(0.415, 0.411)``, 17 % off.
"""

from __future__ import annotations

from pointfail.families import Family
from pointfail.families._text import read_bare_groups
from pointfail.frames import SMART_RESIZE_DEFAULTS, Frame

SYSTEM = (
    "You are an expert UI element locator. Given a GUI image and a user's element description, provide the "
    "coordinates of the specified element as a single (x,y) point.{resolution} For elements with area, return "
    "the center point.\n\nOutput the coordinate pair exactly:\n(x,y)"
)


class GTA1(Family):
    """GTA1 (x,y), resized-input pixels."""

    name = "gta1"
    lineage = ("gta1", "qwen")  # GTA1 is fine-tuned from Qwen2.5-VL
    frame = Frame("pixels_resized", "pixels_resized", None, "xy", "absolute pixels of the smart_resize'd model input")
    checkpoints = ("Salesforce/GTA1-7B", "Salesforce/GTA1-32B", "Salesforce/GTA1-72B")
    backend = None
    resize = SMART_RESIZE_DEFAULTS["gta1"]
    system_prompt = SYSTEM.replace("{resolution}", "")
    point_prompt = SYSTEM.replace("{resolution}", "") + "\n\n{core}"
    box_prompt = point_prompt

    def prompt(self, core_instruction, task="point", absent_possible=False, model_input_size=None):
        """The GTA1 system prompt and the instruction; with ``model_input_size`` ``(Wr, Hr)`` the
        sentence "The image resolution is height Hr and width Wr." is included, as GTA1 expects.
        ``absent_possible`` as in :meth:`Family.prompt`."""
        text = super().prompt(core_instruction, task, absent_possible)
        if model_input_size is not None:
            w, h = model_input_size
            text = text.replace(
                "(x,y) point. For", f"(x,y) point. The image resolution is height {int(h)} and width {int(w)}. For", 1
            )
        return text

    def extract(self, text, diag):
        return read_bare_groups(text, diag, "(", ")", ((2, "point"),))

    def format_point(self, x, y, image_size, model_input_size=None):
        fx, fy = self._frame_values(x, y, image_size, model_input_size)
        return f"({fx},{fy})"


FAMILY = GTA1()

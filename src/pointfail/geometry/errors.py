"""Errors of the geometry package."""

from __future__ import annotations

__all__ = ["GeometryError", "ImageError", "MaskError", "MaskSizeError"]


class GeometryError(ValueError):
    """A target that cannot be used for scoring (bad definition, unreadable file, wrong size)."""


class MaskError(GeometryError):
    """A mask file that cannot be read or decoded, or has an unsupported image mode. The message
    names the file."""


class MaskSizeError(MaskError):
    """A mask whose size differs from its image's. Attributes ``mask_size`` and ``image_size`` are
    ``(width, height)`` in pixels; the message names both."""

    def __init__(self, message: str, mask_size: tuple[int, int], image_size: tuple[int, int]):
        super().__init__(message)
        self.mask_size = mask_size
        self.image_size = image_size


class ImageError(GeometryError):
    """An image file whose size cannot be read (missing, corrupt, not an image)."""

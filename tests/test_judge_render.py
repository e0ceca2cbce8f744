"""Annotated miss images: exact tint arithmetic, untouched pixels, marker size, deterministic bytes."""

import io

import numpy as np
import pytest
from PIL import Image

from pointfail.running.judges.render import GREEN, RED, marker_radius, render_miss, target_raster
from pointfail.records import Target


@pytest.fixture()
def noise_image(tmp_path):
    rng = np.random.default_rng(0)
    arr = rng.integers(0, 256, size=(120, 160, 3), dtype=np.uint8)
    path = tmp_path / "img.png"
    Image.fromarray(arr).save(path)
    return path, arr


def decode(png: bytes) -> np.ndarray:
    with Image.open(io.BytesIO(png)) as im:
        assert im.mode == "RGB"
        return np.array(im)


def test_box_tint_exact_and_rest_unchanged(noise_image):
    path, orig = noise_image
    target = Target(kind="boxes", boxes=[[10, 20, 30.5, 40]])
    # point far from the box: (0.9, 0.9) -> pixel (144, 108); marker radius max(4, round(0.02*120)) = 4
    out = decode(render_miss(path, target, (0.9, 0.9)))
    # columns floor(10)..floor(30.5) = 10..30, rows 20..40 are tinted: round(0.55*p + 0.45*g)
    p = orig[25, 10].astype(int)
    expected = (p * 55 + np.array(GREEN) * 45 + 50) // 100
    assert out[25, 10].tolist() == expected.tolist()
    p = orig[40, 30].astype(int)
    assert out[40, 30].tolist() == ((p * 55 + np.array(GREEN) * 45 + 50) // 100).tolist()
    # just outside the box: untouched
    assert out[25, 9].tolist() == orig[25, 9].tolist()
    assert out[25, 31].tolist() == orig[25, 31].tolist()
    assert out[41, 20].tolist() == orig[41, 20].tolist()
    # every pixel outside the box and more than radius+1 px from the marker centre is untouched
    mask = np.zeros(orig.shape[:2], bool)
    mask[20:41, 10:31] = True
    yy, xx = np.mgrid[0:120, 0:160]
    far = ((xx - 144) ** 2 + (yy - 108) ** 2) > (4 + 2) ** 2
    keep = far & ~mask
    assert np.array_equal(out[keep], orig[keep])
    # the centre of the marker is red
    assert out[108, 144].tolist() == list(RED)


def test_bytes_are_deterministic(noise_image):
    path, _ = noise_image
    t = Target(kind="polygon", polygons=[[[5, 5], [60, 10], [20, 70]]])
    a = render_miss(path, t, (0.5, 0.25))
    b = render_miss(path, t, (0.5, 0.25))
    assert a == b and a[:8] == b"\x89PNG\r\n\x1a\n"
    assert render_miss(path, t, (0.5, 0.26)) != a


def test_marker_sized_to_image():
    assert marker_radius((1024, 768)) == 15  # round(0.02 * 768) = round(15.36)
    assert marker_radius((4000, 3000)) == 60
    assert marker_radius((100, 50)) == 4  # floor of 4 px


def test_point_outside_image_is_drawn_at_border(noise_image):
    path, orig = noise_image
    out = decode(render_miss(path, Target(kind="absent"), (1.5, 0.5)))
    # clamped centre (160, 60): the centre dot (radius max(1, 4 // 5) = 1) reaches column 159
    assert out[60, 159].tolist() == list(RED)
    assert out[60, 100].tolist() == orig[60, 100].tolist()


def test_absent_target_tints_nothing(noise_image):
    path, orig = noise_image
    assert not target_raster(Target(kind="absent"), (160, 120)).any()


def test_polygon_raster():
    r = target_raster(Target(kind="polygon", polygons=[[[0, 0], [9, 0], [9, 9], [0, 9]]]), (20, 20))
    assert r[0:10, 0:10].all() and r.sum() == 100


def test_array_target_and_errors(noise_image):
    path, orig = noise_image
    raster = np.zeros((120, 160), bool)
    raster[0, 0] = True
    out = decode(render_miss(path, raster, (0.5, 0.5)))
    assert out[0, 0].tolist() == ((orig[0, 0].astype(int) * 55 + np.array(GREEN) * 45 + 50) // 100).tolist()
    assert out[0, 1].tolist() == orig[0, 1].tolist()
    with pytest.raises(ValueError, match="160x120"):
        render_miss(path, np.zeros((10, 10), bool), (0.5, 0.5))
    with pytest.raises(ValueError, match="finite"):
        render_miss(path, raster, (float("nan"), 0.5))
    with pytest.raises(OSError):
        render_miss(path.parent / "missing.png", raster, (0.5, 0.5))


def test_mask_target_through_geometry(noise_image, tmp_path):
    path, orig = noise_image
    m = np.zeros((120, 160), np.uint8)
    m[50:60, 70:80] = 255
    Image.fromarray(m, "L").save(tmp_path / "mask.png")
    out = decode(render_miss(path, Target(kind="mask", mask_path="mask.png"), (0.0, 0.0), base_dir=tmp_path))
    assert out[55, 75].tolist() == ((orig[55, 75].astype(int) * 55 + np.array(GREEN) * 45 + 50) // 100).tolist()
    assert out[55, 69].tolist() == orig[55, 69].tolist()


def test_target_region_renders_like_target(noise_image):
    from pointfail.geometry import TargetRegion

    path, _ = noise_image
    t = Target(kind="boxes", boxes=[[10, 20, 30.5, 40]])
    region = TargetRegion.from_target(t, (160, 120))
    assert render_miss(path, region, (0.9, 0.9)) == render_miss(path, t, (0.9, 0.9))


def test_target_raster_boxes_and_mask_errors(tmp_path):
    r = target_raster(Target(kind="boxes", boxes=[[2, 3, 5, 4], [30, 30, 40, 40]]), (10, 8))
    assert r.shape == (8, 10) and int(r.sum()) == 4 * 2  # columns 2..5, rows 3..4; the second box is outside
    assert r[3:5, 2:6].all()
    with pytest.raises(ValueError, match="without mask_path"):
        target_raster(Target(kind="mask"), (10, 8))
    Image.fromarray(np.full((8, 9), 255, np.uint8)).save(tmp_path / "m.png")
    with pytest.raises(ValueError, match="9x8"):
        target_raster(Target(kind="mask", mask_path="m.png"), (10, 8), base_dir=tmp_path)

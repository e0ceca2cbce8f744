"""The stand-in hub's content for rehearsing the source study (``records/pointfail-vlm-rehearsal``).

``python -m pointfail.generated.testing.standin OUT`` writes a stand-in hub directory (the layout
:func:`pointfail.generated.testing.hub.load_catalog` reads): the three benchmarks of the source study, and
ScreenSpot-Pro and PointerBench, in their publishers' exact layouts, with small synthetic scenes, and tiny checkpoints of the study's four
models. The committed copy is ``tests/fixtures/standin_hub/``; ``tests/test_standin_hub.py`` rebuilds
it and compares bytes.

Every repository is a STAND-IN and says so (a ``README.md`` in each, ``cardData.pointfail_stand_in``
in ``repo_info``, the catalogue's ``note``):

* **Point-Bench** (``PointArena/pointarena-data``), the published files exactly
  (:data:`pointfail.inputs.benchmarks.point_bench.RELEASE_FILES`): ``data.json`` rows (``image_filename``,
  ``user_input``, ``category``, ``count``, ``mask_filename``), ``pixmo_metadata.csv`` with the
  steerable rows' reference points (percent), ``selected_images.zip`` with members
  ``selected_images/<category>/<image_filename>`` and ``selected_masks.zip`` with
  ``selected_masks/<category>/<mask_filename>`` (:func:`zip_bytes`); all five categories.
* **Where2Place** (``wentao-yuan/where2place``): ``point_questions.jsonl`` (``question_id``, ``image``,
  ``text`` with RoboPoint's ``<image>`` line and 0-1 answer directive, ``category``), ``images/NN.jpg``,
  ``masks/NN.jpg``.
* **RefSpatial-Bench** (``BAAI/RefSpatial-Bench`` at the commit pointfail pins): ``Location/``,
  ``Placement/``, ``Unseen/`` each with ``question.json`` (``id``, ``object``, ``prompt``, ``suffix``,
  ``rgb_path``, ``mask_path``, ``category``, ``step``), ``image/<id>.png``, ``mask/<id>.png``.
* **ScreenSpot-Pro** (``likaixin/ScreenSpot-Pro``): ``annotations/<application>_<platform>.json``
  (``id``, ``img_filename``, ``bbox``, ``img_size``, ``instruction``, ``instruction_cn``,
  ``application``, ``platform``, ``group``, ``ui_type``) and ``images/<application>_<os>/<file>.png``.
* **PointerBench** (``WarmwindOS/pointerbench``, one repository for the three subsets):
  ``pointerbench-{sheets,text,pro}/data/test/metadata.jsonl`` with each subset's row fields, and the
  1024x768 screenshots ``<subset>/data/test/<file_name>``.
* **Checkpoints**: Qwen2.5-VL and InternVL3 (hf format) tiny random-weight checkpoints of the real
  transformers classes (:mod:`pointfail.generated.testing.tiny`), and for Molmo v1 (remote code only) a tiny
  checkpoint carrying the STAND-IN code of :mod:`pointfail.generated.testing.molmo_v1_standin`. Each writes one
  fixed, well-formed answer in its family's format (:func:`pointfail.generated.testing.tiny.wire_answer`), so
  hits, misses and judge verdicts all occur; the answers are fixed, not skill.

Scenes: 96x64 RGB, grey background, coloured blocks at seeded positions; each target's mask is its
block (255 inside). Files are written with Pillow (PNG, JPEG quality 95), so their bytes are those
of the pinned Pillow.
"""

from __future__ import annotations

import csv
import io
import json
import shutil
from pathlib import Path
from typing import Any

import numpy as np

from pointfail.generated.testing.hub import CATALOG_NAME

W, H = 96, 64
COLORS = {"red": (200, 40, 40), "blue": (40, 60, 200), "green": (40, 160, 60), "yellow": (220, 200, 40)}

# The stand-in repositories' README text names the modules by the dotted paths they had when the
# committed stand-in hub was written (before the package's re-layout): these bytes are pinned by sha256
# and by content commit in records/pointfail-vlm-rehearsal/study.lock and its weights manifests, so
# they stay as written. Today the modules are pointfail.generated.testing.hub and
# pointfail.generated.testing.molmo_v1_standin.
STANDIN_README = """# STAND-IN repository ({what})

Served by pointfail's stand-in hub (`pointfail.testing.hub`) for tests and the rehearsal study
`records/pointfail-vlm-rehearsal`. It is NOT {real}: {how}. Nothing measured on it says anything
about the real {kind}.
"""

# Answers the tiny checkpoints write (token pieces, joined): one fixed point per model, in the
# family's own format and frame.
ANSWERS = {
    "molmo-7b-d": ['<point x="61.5" ', 'y="40.2" alt="target">', "target</point>"],
    "molmoe-1b": ['<point x="22.0" ', 'y="70.5" alt="target">', "target</point>"],
    "qwen2.5-vl-3b": ['```json\n[{"point_2d": [', "30, ", "40", '], "label": "target"}]\n```'],
    "internvl3-2b": ["<ref>target</ref><box>[[", "300, ", "200, ", "500, ", "400]]</box>"],
}

STAND_IN_ORG = "pointfail-standin"
MODELS = {
    # name: (family, stand-in id, the id it stands in for, commit of that id or None)
    "molmo-7b-d": ("molmo", f"{STAND_IN_ORG}/Molmo-7B-D-0924-standin", "allenai/Molmo-7B-D-0924", None),
    "molmoe-1b": ("molmo", f"{STAND_IN_ORG}/MolmoE-1B-0924-standin", "allenai/MolmoE-1B-0924", None),
    "qwen2.5-vl-3b": ("qwen2_5_vl", f"{STAND_IN_ORG}/Qwen2.5-VL-3B-Instruct-tiny", "Qwen/Qwen2.5-VL-3B-Instruct",
                      "66285546d2b821cf421d4f5eb2576359d3770cd3"),
    "internvl3-2b": ("internvl3", f"{STAND_IN_ORG}/InternVL3-2B-hf-tiny", "OpenGVLab/InternVL3-2B-hf", None),
}
"""The study's models: family, the stand-in repository id, the real id it is also served under (so
the commands ``make reproduce STUDY=pointfail-vlm`` prints work against the stand-in hub), and the
commit the real id is served at (the study's pinned one, else derived from the content)."""


# ----------------------------------------------------------------------------------------- scenes


def _png(img) -> bytes:
    buf = io.BytesIO()
    img.save(buf, format="PNG")
    return buf.getvalue()


def _jpeg(img) -> bytes:
    buf = io.BytesIO()
    img.save(buf, format="JPEG", quality=95)
    return buf.getvalue()


def _scene(rng: np.random.RandomState, blocks: list[tuple[str, int]]) -> tuple[Any, list[tuple[str, tuple[int, int, int, int]]]]:
    """A 96x64 image with one block per ``(colour, size)``, placed without overlap; returns the image
    and ``[(colour, (x0, y0, x1, y1))]`` (exclusive ends)."""
    from PIL import Image

    arr = np.full((H, W, 3), 150, np.uint8)
    placed: list[tuple[str, tuple[int, int, int, int]]] = []
    for colour, size in blocks:
        for _ in range(200):
            x0, y0 = int(rng.randint(0, W - size)), int(rng.randint(0, H - size))
            box = (x0, y0, x0 + size, y0 + size)
            if all(box[2] + 2 <= b[0] or b[2] + 2 <= box[0] or box[3] + 2 <= b[1] or b[3] + 2 <= box[1] for _, b in placed):
                break
        arr[box[1]:box[3], box[0]:box[2]] = COLORS[colour]
        placed.append((colour, box))
    return Image.fromarray(arr, "RGB"), placed


def _mask(boxes: list[tuple[int, int, int, int]]):
    from PIL import Image

    m = np.zeros((H, W), np.uint8)
    for x0, y0, x1, y1 in boxes:
        m[y0:y1, x0:x1] = 255
    return Image.fromarray(m, "L")


def _free_space_left(box: tuple[int, int, int, int]) -> tuple[int, int, int, int]:
    """The free-space target "left of" a block: a band as tall as the block, up to 20 px wide."""
    x0, y0, x1, y1 = box
    return (max(0, x0 - 20), y0, max(1, x0 - 1), y1)


def zip_bytes(members: dict[str, bytes], *, utf8_flag: bool = True, folders: bool = True,
              modes: dict[str, int] | None = None, flagless: tuple[str, ...] = ()) -> bytes:
    """A zip archive of ``members`` (name -> bytes) with fixed bytes: stored (no compression, so no
    zlib version shows), members in name order, each dated 1980-01-01, Unix mode 0644 (``modes``
    overrides per name, e.g. a symlink's ``0o120777``), with a directory entry for every folder
    (``folders``), as ``zip -r`` writes them.

    ``utf8_flag=False`` stores non-ASCII names as UTF-8 bytes *without* the zip's UTF-8 flag, as
    macOS's Archive Utility and Info-ZIP do (the case Point-Bench's loaders work around); the
    standard library always sets the flag, so the flag is cleared on the member's ``ZipInfo``;
    ``flagless`` names the members stored that way when ``utf8_flag`` is true."""
    import zipfile

    class _FlaglessInfo(zipfile.ZipInfo):
        def _encodeFilenameFlags(self):  # noqa: N802 - zipfile's name: UTF-8 bytes, bit 11 left clear
            return self.filename.encode("utf-8"), self.flag_bits & ~0x800

    names = set(members)
    if folders:
        for n in list(members):
            parts = n.split("/")[:-1]
            names.update("/".join(parts[:i]) + "/" for i in range(1, len(parts) + 1))
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_STORED) as zf:
        for n in sorted(names):
            cls = zipfile.ZipInfo if utf8_flag and n not in flagless else _FlaglessInfo
            info = cls(n, date_time=(1980, 1, 1, 0, 0, 0))
            info.create_system = 3
            is_dir = n.endswith("/")
            mode = (modes or {}).get(n, 0o40755 if is_dir else 0o100644)
            info.external_attr = (mode << 16) | (0x10 if is_dir else 0)
            zf.writestr(info, b"" if is_dir else members[n])
    return buf.getvalue()


def point_bench_files(seed: int = 1) -> dict[str, bytes]:
    """Point-Bench as PointArena publishes it (see the module docstring): ``data.json``,
    ``pixmo_metadata.csv``, ``selected_images.zip`` (``selected_images/<category>/<image>``) and
    ``selected_masks.zip`` (``selected_masks/<category>/<mask>``); 10 rows, two per category."""
    rng = np.random.RandomState(seed)
    rows, images, masks, pixmo = [], {}, {}, []
    files: dict[str, bytes] = {}
    specs = [
        ("affordable", "Which object would you use to cut paper?", [("red", 12), ("blue", 10)], [0]),
        ("affordable", "Point to the handle of the yellow mug.", [("yellow", 12), ("green", 10)], [0]),
        ("counting", "Point to every blue square.", [("blue", 8), ("blue", 8), ("red", 10)], [0, 1]),
        ("counting", "Point to all the green blocks.", [("green", 9), ("green", 9), ("yellow", 9)], [0, 1]),
        ("spatial", "Point to the block left of the yellow block.", [("red", 12), ("yellow", 12)], [0]),
        ("spatial", "Point to the green block nearest to the top of the image.", [("green", 11), ("blue", 11)], [0]),
        ("reasoning", "Point to the object that does not belong with the others.", [("red", 9), ("red", 9), ("blue", 9)], [2]),
        ("reasoning", "Point to the largest block.", [("yellow", 16), ("blue", 8)], [0]),
        ("steerable", "Point to the object closest to the dot.", [("blue", 12), ("red", 12)], [0]),
        ("steerable", "Point to the object right of the dot.", [("green", 12), ("yellow", 12)], [1]),
    ]
    for i, (cat, text, blocks, targets) in enumerate(specs):
        img, placed = _scene(rng, blocks)
        name = f"{cat}_{i:02d}.png"
        images[f"selected_images/{cat}/{name}"] = _png(img)
        masks[f"selected_masks/{cat}/{cat}_{i:02d}_mask.png"] = _png(_mask([placed[t][1] for t in targets]))
        row: dict[str, Any] = {"image_filename": name, "user_input": text, "category": cat, "mask_filename": f"{cat}_{i:02d}_mask.png"}
        if cat == "counting":
            row["count"] = len(targets)
        rows.append(row)
        if cat == "steerable":
            x0, y0, x1, y1 = placed[targets[0]][1]
            px, py = (x0 - 4) / W * 100, (y0 + y1) / 2 / H * 100
            pixmo.append((name, json.dumps([{"x": round(px, 1), "y": round(py, 1)}])))
    files["data.json"] = (json.dumps(rows, indent=1, ensure_ascii=False) + "\n").encode()
    buf = io.StringIO()
    wr = csv.writer(buf, lineterminator="\n")
    wr.writerow(["image_filename", "points"])
    wr.writerows(pixmo)
    files["pixmo_metadata.csv"] = buf.getvalue().encode()
    files["selected_images.zip"] = zip_bytes(images)
    files["selected_masks.zip"] = zip_bytes(masks)
    return files


W2P_DIRECTIVE = ("Your answer should be formatted as a list of tuples, i.e. [(x1, y1), (x2, y2), ...], where each "
                 "tuple contains the x and y coordinates of a point satisfying the conditions above. The "
                 "coordinates should be between 0 and 1, indicating the normalized pixel locations of the points "
                 "in the image.")


def where2place_files(seed: int = 2) -> dict[str, bytes]:
    """Where2Place in RoboPoint's layout: 4 questions (2 seen, 2 unseen)."""
    rng = np.random.RandomState(seed)
    files, lines = {}, []
    cores = ["Please point to the free space left of the red block.",
             "Locate several points within the vacant space for the following task: place a cup left of the blue block.",
             "Please point to the free space left of the green block.",
             "Find a spot on the table left of the yellow block for a plate."]
    colours = ["red", "blue", "green", "yellow"]
    for i, (core, colour) in enumerate(zip(cores, colours)):
        blocks = [(colour, 12), ("blue" if colour != "blue" else "red", 10)]
        for _ in range(50):
            img, placed = _scene(rng, blocks)
            if placed[0][1][0] >= 12:
                break
        files[f"images/{i:02d}.jpg"] = _jpeg(img)
        files[f"masks/{i:02d}.jpg"] = _jpeg(_mask([_free_space_left(placed[0][1])]))
        lines.append(json.dumps({"question_id": i, "image": f"{i:02d}.jpg", "text": f"<image>\n{core} {W2P_DIRECTIVE}",
                                 "category": "seen" if i % 2 == 0 else "unseen"}))
    files["point_questions.jsonl"] = ("\n".join(lines) + "\n").encode()
    return files


REFSPATIAL_SUFFIX = ("Your answer should be formatted as a list of tuples, i.e. [(x1, y1)], where each tuple contains "
                     "the x and y coordinates of a point satisfying the conditions above. The coordinates should be "
                     "between 0 and 1, indicating the normalized pixel locations of the points in the image.")


def refspatial_files(seed: int = 3) -> dict[str, bytes]:
    """RefSpatial-Bench in RoboRefer's layout: 2 rows in each of Location, Placement, Unseen."""
    rng = np.random.RandomState(seed)
    files: dict[str, bytes] = {}
    for k, split in enumerate(("Location", "Placement", "Unseen")):
        rows = []
        for i in range(2):
            colour = ("red", "blue", "green", "yellow", "red", "blue")[2 * k + i]
            blocks = [(colour, 12), ("yellow" if colour != "yellow" else "green", 10)]
            for _ in range(50):
                img, placed = _scene(rng, blocks)
                if placed[0][1][0] >= 12:
                    break
            if split == "Location":
                prompt = f"Please point to the {colour} block closest to the image edge."
                target = placed[0][1]
            elif i == 0:
                prompt = f"Please point to the free space left of the {colour} block."
                target = _free_space_left(placed[0][1])
            else:
                prompt = (f"In the image, there is a {colour} block. Pinpoint several points within the vacant space "
                          f"situated to the left of the {colour} block.")
                target = _free_space_left(placed[0][1])
            files[f"{split}/image/{i}.png"] = _png(img)
            files[f"{split}/mask/{i}.png"] = _png(_mask([target]))
            rows.append({"id": i, "object": f"the {colour} block", "prompt": prompt, "suffix": REFSPATIAL_SUFFIX,
                         "rgb_path": f"image/{i}.png", "mask_path": f"mask/{i}.png", "category": split.lower(),
                         "step": i + 1})
        files[f"{split}/question.json"] = (json.dumps(rows, indent=1) + "\n").encode()
    return files


SCREENSPOT_PRO_APPS = (("vscode", "macos", "mac", "Dev"), ("excel", "macos", "mac", "Office"))
"""``(application, platform, image-folder os, group)`` of the ScreenSpot-Pro stand-in: the publisher's
annotation files are ``annotations/<application>_<platform>.json`` and its image folders
``images/<application>_<os>/`` (docs/releases.md)."""


def screenspot_pro_files(seed: int = 4) -> dict[str, bytes]:
    """ScreenSpot-Pro as likaixin publishes it: ``annotations/<application>_<platform>.json`` (a JSON
    list of rows: ``id``, ``img_filename``, ``bbox`` ``[x1, y1, x2, y2]`` px, ``img_size`` ``[W, H]``,
    ``instruction``, ``instruction_cn``, ``application``, ``platform``, ``group``, ``ui_type``) and
    ``images/<application>_<os>/<file>.png``; 2 applications, 2 rows each (one text, one icon target)."""
    rng = np.random.RandomState(seed)
    files: dict[str, bytes] = {}
    for k, (app, platform, os_dir, group) in enumerate(SCREENSPOT_PRO_APPS):
        img, placed = _scene(rng, [("blue", 12), ("red", 8)])
        img_filename = f"{app}_{os_dir}/screenshot_2024-11-28_10-00-0{k}.png"
        files[f"images/{img_filename}"] = _png(img)
        rows = []
        for i, ((colour, (x0, y0, x1, y1)), ui_type) in enumerate(zip(placed, ("text", "icon"))):
            rows.append({"img_filename": img_filename, "bbox": [x0, y0, x1 - 1, y1 - 1],
                         "instruction": f"click the {colour} {'label' if ui_type == 'text' else 'button'}",
                         "instruction_cn": "点击这里", "id": f"{app}_{platform}_{i}", "application": app,
                         "platform": platform, "img_size": [W, H], "ui_type": ui_type, "group": group})
        files[f"annotations/{app}_{platform}.json"] = (json.dumps(rows, indent=1, ensure_ascii=False) + "\n").encode()
    return files


PB_W, PB_H = 1024, 768
"""PointerBench's screenshot size (every row's ``image_size``)."""
POINTERBENCH_TAGS = {
    "pointerbench-sheets": {"data_type": "cell", "category": "cell", "ui_style": "bare", "language": "en"},
    "pointerbench-text": {"data_type": "caret", "category": "line_start", "surface": "editor", "language": "en",
                          "difficulty": "easy"},
    "pointerbench-pro": {"data_type": "icon", "element_type": "icon", "app": "Stand-in App", "app_slug": "standin",
                         "app_category": "creative", "platform": "Windows 11", "source_id": "standin_0",
                         "source_file": "standin.ndjson", "language": "en"},
}
"""Each subset's tag fields, named as the release's rows name them (``shared/data/pointerbench``)."""


def pointerbench_files(seed: int = 5) -> dict[str, bytes]:
    """PointerBench as WarmwindOS publishes it: ``<subset>/data/test/metadata.jsonl`` (one row per line:
    ``file_name``, ``id``, ``instruction``, ``bbox`` ``[x0, y0, x1, y1]`` px, ``point``, ``answer_type``,
    ``eval``, the subset's tags, ``image_size`` ``[1024, 768]``) and ``<subset>/data/test/<file_name>``,
    1024x768 PNGs; two rows per subset, ``point_in_bbox`` ones, and for Text (the one subset whose release
    has box rows) one ``iou`` (``bbox``) row."""
    from PIL import Image

    rng = np.random.RandomState(seed)
    files: dict[str, bytes] = {}
    prefix = {"pointerbench-sheets": "pbs", "pointerbench-text": "pbt", "pointerbench-pro": "pbp"}
    for subset, tags in POINTERBENCH_TAGS.items():
        lines = []
        for i, answer_type in enumerate(("point", "bbox" if subset == "pointerbench-text" else "point")):
            arr = np.full((PB_H, PB_W, 3), 240, np.uint8)
            x0, y0 = int(rng.randint(0, PB_W - 120)), int(rng.randint(0, PB_H - 40))
            box = [x0, y0, x0 + 100, y0 + 24]
            arr[box[1]:box[3], box[0]:box[2]] = COLORS["blue"]
            name = f"{i:04d}.png"
            files[f"{subset}/data/test/{name}"] = _png(Image.fromarray(arr, "RGB"))
            ev: dict[str, Any] = ({"type": "point_in_bbox", "bbox": box} if answer_type == "point" else
                                  {"type": "iou", "bbox": box, "min_coverage": 0.9, "min_precision": 0.7})
            row: dict[str, Any] = {"file_name": name, "id": f"{prefix[subset]}_{i:04d}",
                                   "instruction": f"{'Click' if answer_type == 'point' else 'Box'} the blue bar.",
                                   "bbox": box, "point": [(box[0] + box[2]) // 2, (box[1] + box[3]) // 2],
                                   "answer_type": answer_type, "eval": ev}
            row.update(tags)
            row["image_size"] = [PB_W, PB_H]
            lines.append(json.dumps(row, ensure_ascii=False))
        files[f"{subset}/data/test/metadata.jsonl"] = ("\n".join(lines) + "\n").encode()
    return files


SCENES_96 = ("a handful of synthetic 96x64 scenes of coloured blocks, written in the publisher's exact file "
             "layout and field names")


def datasets() -> list[tuple[str, Any, str, Any, str]]:
    """The stand-in hub's datasets: every benchmark that declares a ``standin`` release
    (:class:`pointfail.inputs.benchmarks.StandIn`), as ``(hub folder, writer, what it stands in for,
    the benchmark's fetch source, how)`` in catalogue order (``order``, then folder). No list here:
    a benchmark file that declares a release is served."""
    from pointfail.inputs.benchmarks import benchmarks

    found = [(b.standin, b) for b in benchmarks().values() if b.standin is not None and b.source is not None]
    return [(st.folder, st.writer(), st.real, b.source, st.how or SCENES_96)
            for st, b in sorted(found, key=lambda sb: (sb[0].order, sb[0].folder))]


# ------------------------------------------------------------------------------------ checkpoints


MOLMO_SPECIALS = ["<|endoftext|>", "<im_start>", "<im_end>", "<im_patch>", "<im_col>"]


def build_molmo_v1_standin(out: str | Path, answer: list[str], seed: int = 0) -> Path:
    """A tiny checkpoint carrying the STAND-IN Molmo v1 code (:mod:`pointfail.generated.testing.molmo_v1_standin`):
    ``config.json`` with Molmo v1's ``auto_map`` (``AutoConfig``, ``AutoModelForCausalLM``),
    ``preprocessor_config.json`` with ``AutoProcessor``, the three code files, a byte-level tokenizer
    with Molmo's image tokens and ``answer``'s pieces, and random weights wired to write ``answer``
    (:func:`pointfail.generated.testing.tiny.wire_answer`). Loads with ``trust_remote_code=True`` on the
    transformers 4.4x-4.5x line of the molmo image and on the current line."""
    import torch

    from pointfail.generated.testing import molmo_v1_standin as code
    from pointfail.generated.testing.molmo_v1_standin.config_molmo import MolmoConfig
    from pointfail.generated.testing.molmo_v1_standin.modeling_molmo import MolmoForCausalLM
    from pointfail.generated.testing.tiny import byte_level_tokenizer, wire_answer

    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    torch.manual_seed(seed)
    tok = byte_level_tokenizer(MOLMO_SPECIALS, eos_token="<|endoftext|>", pad_token="<|endoftext|>")
    tok.add_tokens(list(answer))
    cfg = MolmoConfig(vocab_size=len(tok), eos_token_id=tok.convert_tokens_to_ids("<|endoftext|>"),
                      pad_token_id=tok.convert_tokens_to_ids("<|endoftext|>"))
    cfg.auto_map = {"AutoConfig": "config_molmo.MolmoConfig", "AutoModelForCausalLM": "modeling_molmo.MolmoForCausalLM"}
    cfg.architectures = ["MolmoForCausalLM"]
    model = MolmoForCausalLM(cfg).eval()
    wire_answer(model, tok, list(answer), tok.convert_tokens_to_ids("<|endoftext|>"), trigger=":")
    model.save_pretrained(out)
    tok.save_pretrained(out)
    src = Path(code.__file__).parent
    for f in ("config_molmo.py", "modeling_molmo.py", "preprocessing_molmo.py"):
        shutil.copyfile(src / f, out / f)
    (out / "preprocessor_config.json").write_text(json.dumps({
        "auto_map": {"AutoProcessor": "preprocessing_molmo.MolmoProcessor"},
        "processor_class": "MolmoProcessor", "patch_size": 14, "crop_size": 56, "stand_in": True}, indent=2) + "\n")
    return out


def _checkpoint_files(name: str, tmp: Path) -> dict[str, bytes]:
    from pointfail.generated.testing import tiny

    family = MODELS[name][0]
    d = tmp / name
    if family == "molmo":
        build_molmo_v1_standin(d, ANSWERS[name], seed=7 if name == "molmo-7b-d" else 8)
    elif family == "qwen2_5_vl":
        tiny.build_qwen2_5_vl(d, seed=5, answer=ANSWERS[name])
    elif family == "internvl3":
        tiny.build_internvl(d, seed=6, answer=ANSWERS[name])
    return {p.relative_to(d).as_posix(): p.read_bytes() for p in sorted(d.rglob("*")) if p.is_file()}


# -------------------------------------------------------------------------------------- catalogue


def write_datasets(out: str | Path) -> list[dict]:
    """Write every stand-in dataset (:func:`datasets`) under ``out/datasets/<folder>/`` with its
    ``README.md``; returns their catalogue entries (``dir``, ``repo_type``, ``ids``, ``note``), in
    catalogue order. Needs numpy and Pillow, not torch."""
    out = Path(out)
    repos = []
    for bench, builder, real, src, how in datasets():
        folder = f"datasets/{bench}"
        files = builder()
        files["README.md"] = STANDIN_README.format(
            what=f"{bench}, served as {src.repo_id}", real=real, kind="benchmark", how=how).encode()
        _write(out / folder, files)
        repos.append({"dir": folder, "repo_type": "dataset", "ids": [{"repo_id": src.repo_id, "commit": src.revision}],
                      "note": f"STAND-IN for {real} ({src.repo_id}): synthetic scenes in the official layout"})
    return repos


def _write(folder: Path, files: dict[str, bytes]) -> None:
    for rel, data in files.items():
        p = folder / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_bytes(data)


def build_catalog(out: str | Path) -> Path:
    """Write the stand-in hub directory (datasets, checkpoints, READMEs, ``catalog.json``) to ``out``
    (replacing it). Needs torch and transformers (checkpoints). Returns ``out``."""
    import tempfile

    out = Path(out)
    if out.exists():
        shutil.rmtree(out)
    out.mkdir(parents=True)
    repos = write_datasets(out)
    with tempfile.TemporaryDirectory() as tmp:
        for name, (family, standin_id, real_id, real_commit) in MODELS.items():
            folder = f"models/{name}"
            files = _checkpoint_files(name, Path(tmp))
            how = ("a tiny random-weight checkpoint of the real transformers architecture" if family != "molmo" else
                   "a tiny checkpoint whose code files are pointfail's STAND-IN for Molmo v1's remote code "
                   "(pointfail.testing.molmo_v1_standin), implementing its documented interface")  # pinned bytes
            files["README.md"] = STANDIN_README.format(
                what=f"{name}, served as {standin_id} and {real_id}", real=real_id, kind="model",
                how=how + f"; its embeddings are wired to answer {''.join(ANSWERS[name])!r} to every prompt").encode()
            _write(out / folder, files)
            repos.append({"dir": folder, "repo_type": "model",
                          "ids": [{"repo_id": standin_id, "commit": None}, {"repo_id": real_id, "commit": real_commit}],
                          "note": f"STAND-IN for {real_id}: {how}"})
    (out / CATALOG_NAME).write_text(json.dumps({"schema": "pointfail.standin_hub/1", "repos": repos}, indent=1) + "\n")
    return out


def main(argv: list[str] | None = None) -> int:
    """``python -m pointfail.generated.testing.standin OUT``: write the catalogue to OUT."""
    import argparse

    p = argparse.ArgumentParser(prog="python -m pointfail.generated.testing.standin", description=build_catalog.__doc__)
    p.add_argument("out", type=Path)
    args = p.parse_args(argv)
    build_catalog(args.out)
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

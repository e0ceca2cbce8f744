"""Weight-free baselines: ``ocr`` (Tesseract + instruction rules). The ``center`` baseline needs no
logic beyond its backend (:mod:`pointfail.running.backends.center`)."""

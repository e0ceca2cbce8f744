"""STAND-IN for Molmo v1's ``config_molmo.py`` (see this package's ``__init__``): the configuration
of the tiny stand-in network, loaded through the checkpoint's ``auto_map`` (``AutoConfig``)."""

from transformers import PretrainedConfig


class MolmoConfig(PretrainedConfig):
    """Sizes of the stand-in network: ``vocab_size``, ``hidden_size``, ``num_heads``,
    ``intermediate_size``, ``patch_size`` (pixels), ``crop_size`` (pixels, square), ``max_position``;
    ``stand_in`` is always true."""

    model_type = "molmo"

    def __init__(self, vocab_size=300, hidden_size=32, num_heads=2, intermediate_size=64, patch_size=14,
                 crop_size=56, max_position=1024, stand_in=True, **kwargs):
        self.vocab_size = vocab_size
        self.hidden_size = hidden_size
        self.num_heads = num_heads
        self.intermediate_size = intermediate_size
        self.patch_size = patch_size
        self.crop_size = crop_size
        self.max_position = max_position
        self.stand_in = stand_in
        kwargs.setdefault("tie_word_embeddings", False)
        super().__init__(**kwargs)

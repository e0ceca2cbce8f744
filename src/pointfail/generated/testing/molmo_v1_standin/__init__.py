"""A STAND-IN for Molmo v1's remote code (``allenai/Molmo-7B-D-0924``, ``allenai/MolmoE-1B-0924``).

Molmo v1 has no class in transformers: its checkpoints ship their own modelling code, and that code
cannot be fetched here. These three files implement the interface Molmo v1's model card documents,
so pointfail's Molmo backend (:mod:`pointfail.running.backends.molmo`) runs its real code path against a
tiny checkpoint that carries them (:func:`pointfail.generated.testing.standin.build_molmo_v1_standin`):

* ``config_molmo.MolmoConfig`` (``AutoConfig`` through the checkpoint's ``auto_map``);
* ``modeling_molmo.MolmoForCausalLM`` (``AutoModelForCausalLM``) with
  ``generate_from_batch(batch, generation_config, tokenizer=...)``;
* ``preprocessing_molmo.MolmoProcessor`` (``AutoProcessor``) with
  ``process(images=[PIL image], text=str)`` returning ``input_ids``, ``images``,
  ``image_input_idx`` and ``image_masks`` tensors without a batch dimension.

They are NOT Molmo: the network is a one-block decoder over byte tokens whose image patches are added
at ``<im_patch>`` positions; it is written here from the documented interface, not copied. Every
checkpoint that carries these files says STAND-IN in its README and config.
"""

"""Pure wire-format adapters, one module per format (see ``_base``). The formats'
registry (``langhooks.models._formats``) names each one's adapter: a new format's
adapter is its module and its entry there, not a name here."""

"""What every framework bridge shares: the chain a bridged run shows its handlers,
and the firing of the contract's events in its order (``_run``)."""

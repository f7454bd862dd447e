"""Metacontroller's side of the contract: the sync request parsed once into typed objects
(the parent, its previous status, the observed children), and the last-applied annotation by
which its dynamic apply remembers what the hook answered."""

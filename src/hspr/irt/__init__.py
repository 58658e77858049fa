"""Source fits shared by several methods (4PL item bank, ...)."""

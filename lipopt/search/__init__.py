"""The search machinery below the strategies: the linear-region search (``regions``, its tree
``region_tree``), the domain split (``split``) and the sub-network tangent bounds
(``subnets``). Nothing is imported here: each module is imported by name."""

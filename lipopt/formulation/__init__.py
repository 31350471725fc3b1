"""The Pyomo model of the Lipschitz MIP (paper §5, appendix D)."""

from lipopt.formulation.build import LipschitzModel, build

__all__ = ["LipschitzModel", "build"]

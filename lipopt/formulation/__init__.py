"""The Pyomo model of the Lipschitz MIP (paper §5, appendix D)."""

from lipopt.formulation.build import Formulation, LipschitzModel, build

__all__ = ["Formulation", "LipschitzModel", "build"]

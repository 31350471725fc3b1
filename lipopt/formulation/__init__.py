"""The Pyomo model of the Lipschitz MIP (paper §5, appendix D)."""

from lipopt.formulation.build import Formulation, LipschitzModel, ModelSpec, build

__all__ = ["Formulation", "LipschitzModel", "ModelSpec", "build"]

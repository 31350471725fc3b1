"""Input domains: boxes, norm balls, polytopes, a ball ∩ a polytope, and unions of them.

Every domain is a bounded set with nonempty interior (the Lipschitz constant is taken over its
interior). Each one exposes a bounding box, which seeds interval bound propagation, ``contains``
and ``sample`` (points inside, for the lower-bound heuristics).
"""

from typing import Union

from lipopt.domain.disjunction import Disjunction
from lipopt.domain.parse import load_vector, parse_ball, parse_box, parse_clip, parse_polytope
from lipopt.domain.polytope import Intersection, Polytope, ball_part, cut_rows, intersect
from lipopt.domain.shapes import (
    BALLS,
    Box,
    DomainError,
    FloatArray,
    L1Ball,
    L2Ball,
    LinfBall,
    check_dimension,
)

Domain = Union[Box, LinfBall, L1Ball, L2Ball, Polytope, Intersection, Disjunction]

__all__ = [
    "BALLS",
    "Box",
    "Disjunction",
    "Domain",
    "DomainError",
    "FloatArray",
    "Intersection",
    "L1Ball",
    "L2Ball",
    "LinfBall",
    "Polytope",
    "ball_part",
    "check_dimension",
    "cut_rows",
    "intersect",
    "load_vector",
    "parse_ball",
    "parse_box",
    "parse_clip",
    "parse_polytope",
]

"""The primal side: points where the objective is attained, found fast and checked in numpy.

The gradient attack (:mod:`.attack`), the pattern climb (:mod:`.climb`), sampling and start
points (:mod:`.starts`), and the witnesses they hand to the strategies (:mod:`.witness`), which
own the proven bound. :mod:`lipopt.estimators` only wraps them.
"""

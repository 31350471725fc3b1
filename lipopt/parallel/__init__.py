"""Processes: the formulation race's racers (``race``) and the worker pool the strategies and
batches share (``workers``). Nothing is imported here: each module is imported by name."""

"""megazoo: a Megatron-style model zoo on PyTorch.

Subpackages: megazoo.core (parallel runtime), megazoo.zoo (models), megazoo.eval (metrics and
scoring), megazoo.tasks (research projects), megazoo.recipes (recipe files).
"""

__version__ = "0.1.0"

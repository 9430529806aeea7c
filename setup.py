"""Maps the repository's top-level folders onto the `megazoo` namespace.

core/ -> megazoo.core, zoo/ -> megazoo.zoo, eval/ -> megazoo.eval, tasks/ -> megazoo.tasks,
recipes/ -> megazoo.recipes, so nothing generic lands in site-packages. Every folder with an
__init__.py below a root becomes a subpackage, so new subpackages need no edit here.
"""
import os

from setuptools import setup

ROOTS = {
    "megazoo": "megazoo",
    "megazoo.core": "core",
    "megazoo.zoo": "zoo",
    "megazoo.eval": "eval",
    "megazoo.tasks": "tasks",
    "megazoo.recipes": "recipes",
}


def find_packages():
    packages, package_dir = [], {}
    for name, folder in ROOTS.items():
        package_dir[name] = folder
        for root, _dirs, files in os.walk(folder):
            if "__init__.py" in files:
                rel = os.path.relpath(root, folder)
                packages.append(name if rel == "." else name + "." + rel.replace(os.sep, "."))
    return packages, package_dir


packages, package_dir = find_packages()
setup(packages=packages, package_dir=package_dir)

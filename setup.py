"""Maps the repository's top-level folders onto the `megazoo` namespace.

core/ -> megazoo.core, zoo/ -> megazoo.zoo, eval/ -> megazoo.eval, tasks/ -> megazoo.tasks,
recipes/ -> megazoo.recipes, curate/ -> megazoo.curate, so nothing generic lands in site-packages. Every folder with an
__init__.py below a root becomes a subpackage, so new subpackages need no edit here.
"""
import os
import sysconfig

from setuptools import setup

ROOTS = {
    "megazoo": "megazoo",
    "megazoo.core": "core",
    "megazoo.zoo": "zoo",
    "megazoo.eval": "eval",
    "megazoo.tasks": "tasks",
    "megazoo.recipes": "recipes",
    "megazoo.curate": "curate",
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
# megazoo-lm-eval.pth goes to site-packages (as data relative to the install prefix, which works for
# regular and editable installs); it lets `lm_eval --model megazoo` find the backend
_paths = sysconfig.get_paths()
site = os.path.relpath(_paths["purelib"], _paths["data"])
setup(packages=packages, package_dir=package_dir, data_files=[(site, ["megazoo-lm-eval.pth"])])

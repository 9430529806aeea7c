"""Maps the repository's top-level folders onto the `megazoo` namespace.

core/ -> megazoo.core, zoo/ -> megazoo.zoo, eval/ -> megazoo.eval, tasks/ -> megazoo.tasks,
recipes/ -> megazoo.recipes, curate/ -> megazoo.curate, so nothing generic lands in site-packages. Every folder with an
__init__.py below a root becomes a subpackage, so new subpackages need no edit here.
"""
import os

from setuptools import setup
from setuptools.command.build_py import build_py as _build_py

HOOK = "megazoo-lm-eval.pth"

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


class build_py(_build_py):
    """Also puts megazoo-lm-eval.pth (the start-up hook that lets `lm_eval --model megazoo` find the
    backend; lm-eval 0.4 reads no entry points for models) at the wheel's root, i.e. in site-packages
    for any Python version, listed in the wheel's RECORD so that `pip uninstall megazoo` removes it.
    An editable install builds no package files: there the hook goes straight into the editable
    wheel's root (setuptools' editable_wheel points install_lib at it), so it is in RECORD too."""

    def run(self):
        super().run()
        target = self.get_finalized_command("install").install_lib if self.editable_mode else self.build_lib
        self.mkpath(target)
        self.copy_file(HOOK, os.path.join(target, HOOK))

    def get_outputs(self, include_bytecode=True):
        outputs = super().get_outputs(include_bytecode)
        return outputs if self.editable_mode else [*outputs, os.path.join(self.build_lib, HOOK)]


packages, package_dir = find_packages()
setup(packages=packages, package_dir=package_dir, cmdclass={"build_py": build_py})

"""Sphinx configuration of the mondrian documentation site.

Build (warnings are errors, as in CI), with the package importable (installed, or
``PYTHONPATH=src`` after ``python setup.py build_ext --inplace``)::

    pip install "mondrian-process[docs]"     # after pip install . (or --group docs, pip >= 25.1)
    python -m sphinx -W --keep-going -b html docs docs/_build/html
"""

import mondrian

project = "mondrian"
author = "the mondrian developers"
copyright = "the mondrian developers"  # noqa: A001 - Sphinx's name
release = version = mondrian.__version__

extensions = [
    "sphinx.ext.autodoc",
    "sphinx.ext.autosummary",
    "numpydoc",
    "myst_parser",
]

# The user guide (index.md) is the landing page's first chapter; contents.md holds the toctree.
root_doc = "contents"
source_suffix = {".rst": "restructuredtext", ".md": "markdown"}
exclude_patterns = ["_build", "examples", "gallery", "Thumbs.db", ".DS_Store"]

# numpydoc renders the docstrings; autodoc lists the public methods of each class.
numpydoc_show_class_members = False
numpydoc_class_members_toctree = False
numpydoc_xref_param_type = False
autodoc_default_options = {"members": True}
autodoc_member_order = "groupwise"
autosummary_generate = False

# Markdown: anchors for the "#section" links of the user guide and the design page.
myst_heading_anchors = 3
myst_enable_extensions = ["colon_fence", "deflist"]

html_theme = "pydata_sphinx_theme"
html_title = f"mondrian {release}"
html_theme_options = {
    "navigation_depth": 2,
    "header_links_before_dropdown": 7,
    "show_toc_level": 2,
    "secondary_sidebar_items": ["page-toc"],
    "footer_start": ["copyright"],
    "footer_end": [],
}
# Every page is in the top bar: no left sidebar, so the text and tables get its width.
html_sidebars = {"**": []}
html_show_sourcelink = False


def _skip_foreign_members(app, what, name, obj, skip, options):
    """Document only what mondrian defines: not scikit-learn's inherited helpers
    (``set_*_request``, ``get_params``, ``score``...), which it documents itself."""
    module = getattr(obj, "__module__", None) or ""
    if what == "class" and callable(obj) and not module.startswith("mondrian"):
        return True
    return None


def setup(app):
    app.connect("autodoc-skip-member", _skip_foreign_members)

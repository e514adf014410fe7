"""Built-in dataset loaders, one module per dataset family.

Importing this package registers every loader with :func:`gemrag.eval.datasets.register_loader`;
use :func:`gemrag.eval.datasets.load_dataset` to call them.
"""

from __future__ import annotations

from gemrag.eval.loaders.covid_qa import load_covid_qa
from gemrag.eval.loaders.locomo import load_locomo
from gemrag.eval.loaders.multihop import load_multihop
from gemrag.eval.loaders.qa_file import load_qa_file
from gemrag.eval.loaders.qasper import load_qasper
from gemrag.eval.loaders.quality import load_quality

__all__ = ["load_covid_qa", "load_locomo", "load_multihop", "load_qa_file", "load_qasper", "load_quality"]

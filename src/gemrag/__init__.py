"""gemrag: long-term graph memory for LLMs (GEM-RAG and friends), offline by default."""

from gemrag.config import Config, load_config
from gemrag.errors import GemragError
from gemrag.memory import Answer, IndexReport, Memory
from gemrag.types import Hit
from gemrag.version import package_version

__all__ = ["Answer", "Config", "GemragError", "Hit", "IndexReport", "Memory", "load_config"]
__version__ = package_version()

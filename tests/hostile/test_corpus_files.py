"""The committed corpus is exactly what its generator writes."""

import importlib.util

from tests.hostile.corpus import CORPUS, cases


def test_corpus_matches_its_generator():
    spec = importlib.util.spec_from_file_location("hostile_generate", CORPUS / "generate.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    assert cases() == module.CASES
    assert len(module.CASES) >= 20

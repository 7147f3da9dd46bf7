"""The safe unpickler of published split and graph pickles (``data.safe_pickle``)."""
import gzip
import os
import pickle

import numpy as np
import pytest
import torch

from graph_transformers.data.safe_pickle import load_safe_pickle
from graph_transformers.errors import DataError


class _RunsCode:
    def __reduce__(self):
        return (os.system, ("echo this must never run",))


def test_split_arrays_containers_and_tensors_load(tmp_path):
    obj = {"train": np.arange(5), "val": [np.int64(3)], "test": (np.array([1.5], np.float32),),
           "graphs": [(torch.randn(3, 2), torch.tensor([[0, 1], [1, 0]]))], "s": {1, 2}}
    path = tmp_path / "split.pickle"
    path.write_bytes(pickle.dumps(obj))
    got = load_safe_pickle(path)
    assert np.array_equal(got["train"], obj["train"]) and got["train"].dtype == np.int64
    assert got["val"] == [3] and got["s"] == {1, 2}
    assert torch.equal(got["graphs"][0][0], obj["graphs"][0][0])
    gz = tmp_path / "split.pickle.gz"
    gz.write_bytes(gzip.compress(pickle.dumps(obj)))
    assert np.array_equal(load_safe_pickle(gz)["train"], obj["train"])


def test_a_pickle_that_names_a_function_is_refused_without_running_it(tmp_path, capfd):
    path = tmp_path / "evil.pickle"
    path.write_bytes(pickle.dumps({"train": _RunsCode()}))
    with pytest.raises(DataError, match=r"refusing to load LRGB split file .*system"):
        load_safe_pickle(path, "LRGB split file")
    assert "must never run" not in capfd.readouterr().out


@pytest.mark.parametrize("content, message", [(b"", "empty"), (b"not a pickle", "not a pickle"),
                                               (pickle.dumps(list(range(9)))[:-4], "not a pickle")])
def test_empty_or_damaged_files_get_one_line(tmp_path, content, message):
    path = tmp_path / "split.pickle"
    path.write_bytes(content)
    with pytest.raises(DataError, match=message):
        load_safe_pickle(path)
    with pytest.raises(DataError, match="not found"):
        load_safe_pickle(tmp_path / "absent.pickle")

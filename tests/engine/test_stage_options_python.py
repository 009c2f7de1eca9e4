"""A stage built in Python checks its options' types by the rule a config's are checked by (``Option.check``)."""

from __future__ import annotations

import pytest

from replay.pipeline.engine.config import check_options
from replay.pipeline.engine.errors import ReplayError
from replay.stages.select import SelectEvents


def test_an_option_of_the_wrong_type_is_refused_in_python_as_in_a_config():
    """`SelectEvents(types='tool_*')` kept every event (the string read as the globs t, o, o, l, _, *), where a config
    giving the same value is refused E_CONFIG_OPTION_INVALID."""
    with pytest.raises(ReplayError) as by_config:
        check_options(SelectEvents, {"types": "tool_*"}, "stages.select")
    assert by_config.value.code == "E_CONFIG_OPTION_INVALID"
    with pytest.raises(TypeError, match=r"option 'types' of SelectEvents must be list of non-empty str, not 'tool_\*'"):
        SelectEvents(types="tool_*")
    with pytest.raises(TypeError, match="must be list of non-empty str"):
        SelectEvents(types=["tool_*", 3])


def test_an_option_of_the_right_type_is_taken_and_an_unknown_one_names_the_options():
    assert SelectEvents(types=["tool_*"]).config["types"] == ["tool_*"]
    with pytest.raises(TypeError, match=r"SelectEvents has no option 'kinds'; its options: .*types"):
        SelectEvents(kinds=["tool_*"])

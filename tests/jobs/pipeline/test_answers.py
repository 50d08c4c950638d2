from symbolkg.jobs.core.answers import interpret, is_correct
from symbolkg.jobs.core.rows import Problem

TFU = ("A) True", "B) False", "C) Uncertain")
TF = ("A) True", "B) False")


def p(options, answer, **meta):
    return Problem("x", "d", "", "", options, answer, meta=meta)


def test_verdicts_map_to_option_letters():
    assert interpret(p(TFU, "C"), "True") == "A"
    assert interpret(p(TFU, "C"), "False") == "B"
    assert interpret(p(TFU, "C"), "Unknown") == "C"  # "Uncertain" in FOLIO


def test_unknown_on_a_closed_world_true_false_dataset_is_false():
    # negation as failure: without an Unknown option the world is closed
    assert interpret(p(TF, "B"), "Unknown") == "B"
    assert interpret(p(TF, "B"), "False") == "B"
    # ... but no answer at all is never turned into one
    assert interpret(p(TF, "A"), None) is None
    assert not is_correct(p(TF, "A"), None)


def test_letters_pass_through_and_garbage_is_rejected():
    opts = ("A) x", "B) y", "C) z", "D) w", "E) v")
    assert interpret(p(opts, "D"), "D") == "D"
    assert interpret(p(opts, "D"), "F") is None
    assert interpret(p(opts, "D"), "banana") is None


def test_free_text_answers_match_aliases():
    prob = p((), "Barack Obama", answer_aliases=["Obama"])
    assert is_correct(prob, "barack obama.")
    assert is_correct(prob, "Obama")
    assert not is_correct(prob, "Biden")

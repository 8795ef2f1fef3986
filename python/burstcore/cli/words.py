"""The words of a command line arranged for argparse (files among options, options before the
command, values below zero, '--'), and what the parse leaves to settle (--filter given once or
once per file)."""

from __future__ import annotations

import argparse
import itertools
import os
import re
from collections.abc import Collection, Sequence

from .errors import UsageError
from .messages import _many


def _negative_values(argv: Sequence[str], valued: Collection[str]) -> list[str]:
    """`argv` with '--offsets -3ms,0' joined as '--offsets=-3ms,0', for each option in `valued`
    (those taking a value): argparse takes a value that starts with '-' and is no plain number
    for an option, and told '--windows -1ms' that --windows "expected one argument" instead of
    what is wrong with the value. A plain number ('--top -1') argparse reads itself."""
    out: list[str] = []
    for arg in argv:
        if (
            out
            and out[-1] in valued
            and arg[:1] == "-"
            and arg[1:2] in (*"0123456789", ".")
            and not _PLAIN_NEGATIVE.match(arg)
        ):
            out[-1] = f"{out[-1]}={arg}"
        else:
            out.append(arg)
    return out


# What argparse itself reads as a negative number, not an option (its _negative_number_matcher).
_PLAIN_NEGATIVE = re.compile(r"^-\d+$|^-\d*\.\d+$")


def _valued_options(
    parser: argparse.ArgumentParser, command: str | None = None, short: bool = False
) -> dict[str, argparse.Action]:
    """The long options (and the short ones too if `short`) of every command (or of `command`
    alone) that take a value, each with its action."""
    commands = _subparsers(parser)
    parsers = (parser, *commands.values()) if command is None else (commands[command],)
    return {
        name: action
        for own in parsers
        for action in own._actions
        if action.nargs != 0
        for name in action.option_strings
        if short or name.startswith("--")
    }


def _flag_options(parser: argparse.ArgumentParser, command: str) -> frozenset[str]:
    """The options of `command` that take no value, long and short."""
    own = _subparsers(parser)[command]
    return frozenset(name for action in own._actions if action.nargs == 0 for name in action.option_strings)


def _one_filter_or_each(args: argparse.Namespace) -> argparse.Namespace:
    """``--filter`` given once (a string, for every file) or once per file (a list, in order)."""
    given = getattr(args, "filter", None)
    if given is None:
        return args
    files = getattr(args, "files", None) or [getattr(args, "file", None)]
    if len(given) == 1:
        args.filter = given[0]
    elif len(given) == len(files):
        args.filter = list(given)
    elif len(files) == 1:
        raise UsageError(f"{len(given)} --filter options for 1 file: give --filter once")
    else:
        raise UsageError(
            f"{len(given)} --filter options for {_many(len(files), 'file')}: give --filter once for "
            "every file, or once per file in the order of the files"
        )
    return args


def _filter_for(args: argparse.Namespace, k: int) -> str | None:
    """The filter of the k-th file when the files are read one at a time."""
    f = args.filter
    return f[k] if isinstance(f, list) else f


def _subparsers(parser: argparse.ArgumentParser) -> dict[str, argparse.ArgumentParser]:
    """The parser of each command."""
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            return dict(action.choices)
    return {}


def _command_first(parser: argparse.ArgumentParser, argv: list[str]) -> list[str]:
    """`argv` with the command first when only options of the command's own, with their values,
    stand before it (`burstcore -q scan a.pcap`, `burstcore -o x.csv scan a.pcap`, `burstcore -qo
    x.csv scan a.pcap`): the command's
    parser takes them wherever they stand, and the top level's plain parse refused them as
    "unrecognized arguments" or took a value for the command ("invalid choice: 'x.csv'"). The
    command is the first word that is neither such an option nor its value (`-o scan scan a.pcap`
    writes to 'scan'). A word that is no option of the command's (a file, a typo) or one of the
    top level's own (--help, --version) leaves `argv` as it is; an option whose value would be
    the command itself (`burstcore -o scan a.pcap`) is told as the command's parser tells one
    given without its value."""
    commands = _subparsers(parser)
    top = parser._option_string_actions
    valueless: tuple[argparse.ArgumentParser, argparse.Action] | None = None
    stray: tuple[str, str] | None = None
    for at, word in enumerate(argv):
        if word not in commands:
            continue
        if at == 0:
            return argv
        own = commands[word]
        told = _options_only(own, top, argv[:at])
        if told is True:
            return [word, *argv[:at], *argv[at + 1 :]]
        if isinstance(told, argparse.Action) and valueless is None:
            valueless = own, told
        if isinstance(told, str) and stray is None:
            stray = word, told
    if valueless is not None:
        own, action = valueless
        own.error(f"argument {'/'.join(action.option_strings)}: expected one argument")
    if stray is not None:
        # Else "invalid choice" for the first word, which may be an option's value.
        command, word = stray
        parser.error(
            f"{word!r} stands before the command {command!r} and is no option of it nor an option's value: give "
            f"the files after the command (burstcore {command} FILE ...), and quote a value of several words"
        )
    return argv


def _options_only(
    own: argparse.ArgumentParser, top: Collection[str], words: Sequence[str]
) -> bool | argparse.Action | str:
    """Whether `words` are all options of `own` (none of them the top level's) with their values
    (True), such words but for the last option's value (that option), or not: a word that is no
    option (that word), an option `own` does not take or the top level's (False)."""
    options = own._option_string_actions
    at = 0
    while at < len(words):
        word = words[at]
        if not word.startswith("-") or word == "-":
            return word
        at += 1
        # The option whose value is the next word, if any.
        takes_next: argparse.Action | None
        if word.startswith("--"):
            name = word.split("=", 1)[0]
            action = options.get(name)
            if action is None or name in top:
                return False
            takes_next = action if action.nargs is None and "=" not in word else None
        else:
            # Short options read as argparse reads them: flags clustered (-qv), the last of them
            # maybe one taking a value, attached (-qox.csv) or in the next word (-qo x.csv).
            takes_next = None
            for k in range(1, len(word)):
                name = "-" + word[k]
                action = options.get(name)
                if action is None or name in top:
                    return False
                if action.nargs != 0:
                    takes_next = action if action.nargs is None and k == len(word) - 1 else None
                    break
        if takes_next is not None:
            if at == len(words):
                return takes_next
            at += 1  # its value, whatever it is: the command's parser judges it as it would after the command
    return True


def _parse(parser: argparse.ArgumentParser, argv: list[str]) -> tuple[argparse.Namespace, list[str]]:
    """The command line's namespace and what it did not recognize. A command's files may stand
    anywhere among its options, as tcpdump's and most tools' do (`scan a.pcap --windows 1ms
    b.pcap`): argparse's plain parse takes the files given before the first option and refuses
    the others as "unrecognized arguments". An option's value is still the one word after it (a
    list is one comma-separated word), so a path is never read as a value nor a value as a path.
    Anything else before the command (--version, --help, nothing) goes to the plain parse.

    After '--' every word is a file, even one starting with '-': argparse's intermixed parse
    drops the '--' in its first pass and then reads such a word as an option, so those words go
    through it as stand-ins that cannot look like one, and come back as they were typed."""
    argv = _command_first(parser, argv)
    own = _subparsers(parser).get(argv[0]) if argv else None
    if own is None:
        return parser.parse_known_args(argv)
    words = list(argv[1:])
    literal: dict[str, str] = {}
    if "--" in words:
        at = words.index("--")
        literal = {f"\0file {k}": word for k, word in enumerate(words[at + 1 :])}
        words = words[:at] + list(literal)
    dashed_value = _dashed_value(own, words)
    if dashed_value is not None:
        option, given = dashed_value
        own.error(f"argument {option}: {given!r} is read as an option, not as its value: give it as {option}={given}")
    dashed = _dashed_file(own, words)
    if dashed is not None:
        own.error(
            f"{dashed!r} is read as an option, though a file of that name is here: give such a FILE after "
            f"'--' (burstcore {argv[0]} -- {dashed}) or as ./{dashed}"
        )
    # The command's parser alone: argparse cannot intermix the top level's subcommand argument.
    args, unknown = own.parse_known_intermixed_args(words)
    args.command = argv[0]
    for name in ("files", "file"):
        value = getattr(args, name, None)
        if isinstance(value, list):
            setattr(args, name, [literal.get(v, v) for v in value])
        elif isinstance(value, str):
            setattr(args, name, literal.get(value, value))
    return args, [literal.get(v, v) for v in unknown]


def _dashed_file(own: argparse.ArgumentParser, words: Sequence[str]) -> str | None:
    """The first word that names a file but starts with '-' and is no option of `own`: argparse
    takes it for an unknown option, and `info -x.pcap` was told "the following arguments are
    required: FILE", the file given not named."""
    options = own._option_string_actions
    for word in words:
        if not word.startswith("-") or word == "-" or word.split("=", 1)[0] in options or word[:2] in options:
            continue
        # A word with a space (and a negative number) argparse reads as a value, not an option.
        if " " not in word and _PLAIN_NEGATIVE.match(word) is None and os.path.isfile(word):
            return word
    return None


def _is_option(options: Collection[str], word: str) -> bool:
    """Whether argparse reads `word` as one of `options` (exactly, abbreviated, with its value
    joined to it, or short ones clustered)."""
    name = word.split("=", 1)[0]
    if name in options or word[:2] in options:
        return True
    return name.startswith("--") and any(option.startswith(name) for option in options)


def _dashed_value(own: argparse.ArgumentParser, words: Sequence[str]) -> tuple[str, str] | None:
    """The first option taking one value whose value starts with '-' ('--output -x.csv',
    '--title -draft'), with that value: argparse reads such a word as an option, and said the
    option "expected one argument" (or, a file of that name being here, `_dashed_file` told to
    give it after '--', where it is a capture)."""
    options = own._option_string_actions
    for before, word in itertools.pairwise(words):
        action = options.get(before)
        if action is None or action.nargs is not None or not word.startswith("-") or word == "-":
            continue
        if " " not in word and _PLAIN_NEGATIVE.match(word) is None and not _is_option(options, word):
            # The long name: '-o=-x.csv' is no form of argparse's documented ones.
            return next((name for name in action.option_strings if name.startswith("--")), before), word
    return None


def _elsewhere(parser: argparse.ArgumentParser, command: str, unknown: Sequence[str]) -> str:
    """For 'unrecognized arguments': which commands take the first of `unknown` that is an option
    of another command (`info x.pcap -o x.json`, `info --threads 2`), as ' (...)', else ''."""
    for word in unknown:
        name = word.split("=", 1)[0]
        if not name.startswith("-") or name == "-":
            continue
        others = [c for c, own in _subparsers(parser).items() if c != command and name in own._option_string_actions]
        if not others:
            continue
        listed = f"{', '.join(others[:-1])} and {others[-1]}" if len(others) > 1 else others[0]
        if len(others) > 3:
            listed = f"{', '.join(others[:3])} and {len(others) - 3} more"
        told = f" ({name} is an option of {listed}, not of {command}"
        if command == "info" and name in ("-o", "--output"):
            told += "; info writes to standard output: redirect it, > FILE"
        return told + ")"
    return ""

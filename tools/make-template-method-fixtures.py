#!/usr/bin/env python3
"""Reference renderings of small templates that call Python's str, list and dict methods,
format strings with str.format, and build dicts with keys of every hashable kind.

    python3 tools/make-template-method-fixtures.py [OUT]
        (default: tests/fixtures/template_methods.json; needs `pip install Jinja2==3.1.6`)

Chat templates run in Python's jinja2 as Hugging Face transformers sets it up (the environment
of ../shared/testdata/templates/render.py, repeated here): an ImmutableSandboxedEnvironment, so
methods that change a list or dict in place raise SecurityError. Each case is rendered there
and written as {"template", "context", "output"} or, where jinja2 raises,
{"template", "context", "error"} (the message is for people; a conforming renderer must fail
too, with any message). tests/template_methods_test.cpp renders every case with the engine.
"""
import json
import sys
from pathlib import Path

import jinja2
import jinja2.ext
from jinja2.sandbox import ImmutableSandboxedEnvironment

ROOT = Path(__file__).resolve().parent.parent


def tojson(x, ensure_ascii=False, indent=None, separators=None, sort_keys=False):
    return json.dumps(x, ensure_ascii=ensure_ascii, indent=indent, separators=separators,
                      sort_keys=sort_keys)


def environment():
    env = ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True,
                                        extensions=[jinja2.ext.loopcontrols])
    env.filters["tojson"] = tojson
    return env


# Templates, or (template, context) pairs. Grouped by what they exercise.
STR_CASES = [
    "{{ 'hello world'.capitalize() }}|{{ 'HELLO'.capitalize() }}|{{ ''.capitalize() }}",
    "{{ 'HeLLo'.casefold() }}",
    "[{{ 'ab'.center(6) }}][{{ 'ab'.center(7, '*') }}][{{ 'abc'.center(2) }}]",
    "{{ 'ab'.center(5, 'xy') }}",
    "{{ 'banana'.count('a') }} {{ 'banana'.count('an', 2) }} {{ 'banana'.count('a', 1, -1) }}",
    "{{ 'banana'.count('') }} {{ ''.count('') }} {{ 'aaaa'.count('aa') }}",
    "{{ 'file.txt'.endswith('.txt') }} {{ 'file.txt'.endswith(('.md', '.txt')) }}",
    "{{ 'file.txt'.endswith('file', 0, 4) }} {{ 'abc'.endswith('') }}",
    "{{ 'a\\tbc\\td'.expandtabs() }}|{{ 'a\\tb'.expandtabs(4) }}|{{ 'ab\\ncd\\te'.expandtabs(3) }}",
    "{{ 'hello'.find('l') }} {{ 'hello'.find('z') }} {{ 'hello'.find('l', 3) }} "
    "{{ 'hello'.find('l', -2) }} {{ 'hello'.find('', 5) }} {{ 'hello'.find('', 6) }}",
    "{{ 'héllo'.find('l') }} {{ 'héllo'.rfind('l') }}",
    "{{ 'hello'.index('e') }}",
    "{{ 'hello'.index('z') }}",
    "{{ 'hello'.rindex('l') }}",
    "{{ 'hello'.rindex('z') }}",
    "{{ 'a1'.isalnum() }} {{ 'a 1'.isalnum() }} {{ ''.isalnum() }}",
    "{{ 'abc'.isalpha() }} {{ 'ab1'.isalpha() }} {{ ''.isalpha() }}",
    "{{ 'abc'.isascii() }} {{ 'é'.isascii() }} {{ ''.isascii() }}",
    "{{ '123'.isdecimal() }} {{ '12.3'.isdecimal() }} {{ ''.isdecimal() }}",
    "{{ '123'.isdigit() }} {{ '-1'.isdigit() }} {{ '123'.isnumeric() }} {{ 'x'.isnumeric() }}",
    "{{ 'name_1'.isidentifier() }} {{ '1name'.isidentifier() }} {{ ''.isidentifier() }} "
    "{{ '_'.isidentifier() }}",
    "{{ 'abc'.islower() }} {{ 'aBc'.islower() }} {{ '123'.islower() }} {{ 'a1'.islower() }}",
    "{{ 'ABC'.isupper() }} {{ 'AbC'.isupper() }} {{ '1'.isupper() }}",
    "{{ 'abc '.isprintable() }} {{ 'a\\nb'.isprintable() }} {{ ''.isprintable() }}",
    "{{ ' \\t\\n'.isspace() }} {{ ''.isspace() }} {{ ' a'.isspace() }}",
    "{{ 'Hello World'.istitle() }} {{ 'Hello world'.istitle() }} {{ ''.istitle() }} "
    "{{ 'A1 B2'.istitle() }}",
    "{{ ', '.join(['a', 'b', 'c']) }}|{{ ''.join('xyz') }}|{{ '-'.join([]) }}",
    "{{ ', '.join(['a', 1]) }}",
    "{{ '-'.join({'k': 1, 'j': 2}) }}",
    "[{{ 'ab'.ljust(5) }}][{{ 'ab'.ljust(5, '.') }}][{{ 'abc'.ljust(1) }}]",
    "[{{ 'ab'.rjust(5) }}][{{ 'ab'.rjust(5, '0') }}][{{ 'é'.rjust(3, '·') }}]",
    "{{ 'ab'.ljust('5') }}",
    "{{ 'MiXeD'.lower() }} {{ 'MiXeD'.upper() }} {{ 'MiXeD'.swapcase() }}",
    "[{{ '  a b  '.strip() }}][{{ '  a b  '.lstrip() }}][{{ '  a b  '.rstrip() }}]",
    "[{{ 'xxaxx'.strip('x') }}][{{ 'xyab'.lstrip('yx') }}][{{ 'abyx'.rstrip('xy') }}]"
    "[{{ ' a '.strip(none) }}]",
    "{{ 'a=b=c'.partition('=') }} {{ 'abc'.partition('=') }}",
    "{{ 'a=b=c'.rpartition('=') }} {{ 'abc'.rpartition('=') }}",
    "{{ 'abc'.partition('') }}",
    "{% set head, sep, tail = 'key: value'.partition(': ') %}{{ head }}|{{ sep }}|{{ tail }}",
    "{{ 'TestCase'.removeprefix('Test') }} {{ 'TestCase'.removeprefix('Case') }} "
    "{{ 'TestCase'.removesuffix('Case') }} {{ 'x'.removesuffix('') }}",
    "{{ 'aaa'.replace('a', 'b') }} {{ 'aaa'.replace('a', 'b', 2) }} {{ 'ab'.replace('', '-') }}",
    "{{ 'aaa'.replace('a', 'b', -1) }} {{ 'abc'.replace('b', '') }}",
    "{{ 'a,b,,c'.split(',') }} {{ '  a  b '.split() }} {{ 'a,b,c'.split(',', 1) }}",
    "{{ 'a b c'.split(maxsplit=1) }} {{ ''.split() }} {{ ''.split(',') }}",
    "{{ 'a,b'.split('') }}",
    "{{ 'a,b,c'.rsplit(',', 1) }} {{ ' a b c '.rsplit(None, 1) }} {{ 'a b'.rsplit() }}",
    "{{ 'a\\nb\\r\\nc\\rd'.splitlines() }} {{ 'a\\n\\nb\\n'.splitlines() }} {{ ''.splitlines() }}",
    "{{ 'a\\nb\\r\\n'.splitlines(true) }} {{ 'a\\nb'.splitlines(keepends=true) }}",
    "{{ 'x\\x0by\\x0cz\\x1ew'.splitlines() }}",
    "{{ 'hello'.startswith('he') }} {{ 'hello'.startswith(('x', 'h')) }} "
    "{{ 'hello'.startswith('l', 2) }} {{ 'hello'.startswith('') }}",
    "{{ 'hello'.startswith(1) }}",
    "{{ 'hello world'.title() }} {{ \"they're bill's\".title() }} {{ 'a1b c_d'.title() }}",
    "{{ '42'.zfill(5) }} {{ '-42'.zfill(5) }} {{ '+7'.zfill(3) }} {{ 'abc'.zfill(2) }} "
    "{{ ''.zfill(2) }}",
    "{{ 'abc'.translate({97: 'A', 98: none, 99: 120}) }}",
    "{{ 'abc'.upper().lower().strip() }}",
    "{{ 'a-b-c'.rsplit('-') }} {{ 'a-b-c'.rsplit('-', 0) }} {{ '  x  y  '.rsplit(maxsplit=1) }} "
    "{{ 'a  b'.rsplit(' ', 1) }}",
    "{{ 'héllo wörld'.upper() }} {{ 'ÀB'.lower() }} {{ 'éa'.capitalize() }}",
    "{{ 'Ελληνικά ΣΟΦΙΑ'.lower() }} {{ 'привет мир'.title() }} {{ 'Łódź'.swapcase() }} "
    "{{ 'ÿ'.upper() }}",
    "{{ 'é'.islower() }} {{ 'É1'.isupper() }} {{ 'Élan Été'.istitle() }}",
    "{{ 'ÉCOLE'|lower }} {{ 'ça va'|upper }} {{ 'ça va'|title }} {{ 'ÇA'|capitalize }}",
    "{{ 'a-b'.split('-', -1) }} {{ 'abc'.split('abc') }} {{ '\u3000a\u3000'.split() }}",
    "{{ 'abcabc'.rfind('b', 0, 4) }} {{ 'abcabc'.find('c', -3, -1) }} {{ 'abc'.find('c', none) }}",
    "{{ 'abc'.startswith('bc', 1) }} {{ 'abc'.endswith('ab', 0, -1) }} "
    "{{ 'abc'.startswith('abcd') }} {{ 'abc'.startswith(('a',)) }}",
    "{{ 'ab'.zfill(-3) }}|{{ 'ab'.center(-1) }}|{{ 'ab'.ljust(0) }}",
    "{{ 'x'.center(4, 'é') }} {{ 'abc'.center(6) }} {{ 'ab'.center(5) }}",
    "{{ 'a\u2028b\x85c'.splitlines() }}",
    "{{ 'ab'.count('a', 5) }} {{ 'ab'.count('', 5) }} {{ 'ab'.count('', 1) }}",
    "{{ 'abc'.nosuchmethod() }}",
    "{{ 'abc'.center() }}",
    "{{ 'abc'.find() }}",
    "{{ 'abc'.count(1) }}",
    "{{ 'abc'.zfill('3') }}",
    "{{ 'abc'.split(',', 'x') }}",
    "{{ 'a b'['split']() }}",
    "{{ 'abc'.upper is callable }} {{ 'abc'.upper() is string }}",
    ("{{ s.strip().split('\\n')|length }}", {"s": "  one\ntwo\nthree  "}),
    ("{{ m.content.startswith('<think>') }}", {"m": {"content": "<think>x</think>"}}),
]

FORMAT_CASES = [
    "{{ '{} and {}'.format('a', 'b') }}",
    "{{ '{0}{1}{0}'.format('a', 'b') }}",
    "{{ '{name} is {age}'.format(name='Ann', age=30) }}",
    "{{ '{} {name}'.format(1, name='x') }}",
    "{{ '{{literal}} {}'.format(5) }}",
    "{{ '{}'.format(none) }} {{ '{}'.format(true) }} {{ '{}'.format(1.0) }} "
    "{{ '{}'.format([1, 'a']) }} {{ '{}'.format({'k': 'v'}) }}",
    "[{{ '{:>8}'.format('ab') }}][{{ '{:<8}'.format('ab') }}][{{ '{:^8}'.format('ab') }}]",
    "[{{ '{:*^9}'.format('mid') }}][{{ '{:->6}'.format(42) }}][{{ '{:8}'.format('s') }}]"
    "[{{ '{:8}'.format(3) }}]",
    "{{ '{:.2f}'.format(3.14159) }} {{ '{:.0f}'.format(2.5) }} {{ '{:.3f}'.format(1) }} "
    "{{ '{:f}'.format(1.5) }}",
    "{{ '{:05d}'.format(42) }} {{ '{:05d}'.format(-42) }} {{ '{:+d}'.format(5) }} "
    "{{ '{: d}'.format(5) }} {{ '{:d}'.format(true) }}",
    "{{ '{!r}'.format('a') }} {{ '{!s}'.format('a') }} {{ '{!r:>6}'.format('a') }} "
    "{{ '{!r}'.format(1) }}",
    "{{ '{!a}'.format('é') }}",
    "{{ '{:x}'.format(255) }} {{ '{:X}'.format(255) }} {{ '{:#x}'.format(255) }} "
    "{{ '{:o}'.format(8) }} {{ '{:#b}'.format(5) }} {{ '{:08b}'.format(5) }}",
    "{{ '{:,}'.format(1234567) }} {{ '{:_}'.format(1234567) }} {{ '{:,.2f}'.format(1234567.891) }}",
    "{{ '{:e}'.format(12345.678) }} {{ '{:.2E}'.format(0.000123) }} {{ '{:g}'.format(0.0001) }} "
    "{{ '{:g}'.format(1e20) }} {{ '{:.3g}'.format(3.14159) }}",
    "{{ '{:.1%}'.format(0.256) }} {{ '{:%}'.format(1) }}",
    "{{ '{:.3}'.format(1.0) }} {{ '{:.2}'.format(1234.5) }} {{ '{:.3}'.format('abcdef') }}",
    "{{ '{:=+8.2f}'.format(3.5) }} {{ '{:08.2f}'.format(-3.5) }} {{ '{:+.1f}'.format(-0.04) }}",
    "[{{ '{:c}'.format(65) }}][{{ '{:5}'.format(true) }}][{{ '{}'.format(none) }}]",
    "{{ '{:>5}'.format(none) }}",
    "{{ '{0[0]} {0[1]}'.format(['x', 'y']) }} {{ '{0[key]}'.format({'key': 'v'}) }}",
    "{{ '{d[a]} {d.a}'.format(d={'a': 1}) }}",
    "{{ '{:{w}}|'.format('x', w=4) }} {{ '{:>{}}'.format('y', 3) }}",
    "{{ '{:.2f}'.format(1e300 * 10) }} {{ '{:f}'.format(-0.0) }}",
    "{{ '{}'.format() }}",
    "{{ '{1}'.format('a') }}",
    "{{ '{name}'.format(other=1) }}",
    "{{ '{0} {}'.format('a', 'b') }}",
    "{{ '{:d}'.format('x') }}",
    "{{ '{:d}'.format(1.5) }}",
    "{{ '{:.2f}'.format('x') }}",
    "{{ '{:q}'.format(1) }}",
    "{{ '{:+}'.format('s') }}",
    "{{ '{'.format(1) }}",
    "{{ '}'.format(1) }}",
    "{{ '{!x}'.format(1) }}",
    "{{ '{:>5}'.format([1]) }}",
    "{{ '{:.2d}'.format(3) }}",
    "{{ '{name}-{n:03d}'.format_map({'name': 'id', 'n': 7}) }}",
    "{{ '{0}'.format_map({'0': 1}) }}",
    "{{ '{:>10.3f}|{:<+7d}|{:^7}'.format(2.71828, 42, 'mid') }}",
    "{{ '{:,}'.format(-1234567) }} {{ '{:_x}'.format(305441741) }} {{ '{:,d}'.format(999) }}",
    "{{ '{:e}'.format(5) }} {{ '{:g}'.format(100000) }} {{ '{:g}'.format(1e6) }} "
    "{{ '{:.0e}'.format(12345) }} {{ '{:#.0f}'.format(3) }} {{ '{:n}'.format(1234) }}",
    "{{ '{:·^9}'.format('é') }} {{ '{:05}'.format('ab') }} {{ '{:<05}'.format(7) }}",
    "{{ '{0!r:^10}|{0!s:>4}'.format('q') }}",
    "{{ '{}|{}'.format(undefined_name, 1) }}",
    "{{ '{:f}'.format(1e16) }} {{ '{}'.format(1e16) }} {{ '{}'.format(0.1 + 0.2) }} "
    "{{ '{:.2f}'.format(0.125) }} {{ '{:.1f}'.format(0.25) }}",
    "{{ '{:X}'.format(-255) }} {{ '{:#o}'.format(-8) }} {{ '{:+x}'.format(10) }}",
    "{{ '{:,}'.format('s') }}",
    "{{ '{:,b}'.format(5) }}",
    "{{ '{:{}{}}'.format('x', '>', 4) }}",
    "{{ '{0.real}'.format({'real': 'r'}) }} {{ '{0[1]}'.format('abc') }}",
    "{{ '{a[0]}, {a[1]}'.format(a=[1, 2]) }} {{ '{:d}'.format(false) }}",
    ("{{ '{}: {}'.format(m.role|upper, m.content) }}", {"m": {"role": "user", "content": "hi"}}),
    ("{{ 'Today is {}.'.format(date) }}", {"date": "26 Jul 2024"}),
    ("{{ '<tool_call>{}</tool_call>'.format(call|tojson) }}", {"call": {"name": "f", "args": {}}}),
]

LIST_CASES = [
    "{{ [1, 2, 3, 2].index(2) }} {{ ['a', 'b'].index('b') }}",
    "{{ [1, 2].index(5) }}",
    "{{ [1, 2, 3, 2, 1].index(1, 1) }} {{ [1, 2, 3].index(3, -1) }}",
    "{{ [1, 2, 2, '2'].count(2) }} {{ [].count(1) }} {{ [1, 1.0, true].count(1) }}",
    "{% set a = [1, [2]] %}{% set b = a.copy() %}{{ b }} {{ b == a }}",
    "{% set a = [3, 1] %}{{ a.append(2) }}",
    "{% set a = [3, 1] %}{{ a.extend([2]) }}",
    "{% set a = [3, 1] %}{{ a.insert(0, 2) }}",
    "{% set a = [3, 1] %}{{ a.pop() }}",
    "{% set a = [3, 1] %}{{ a.remove(3) }}",
    "{% set a = [3, 1] %}{{ a.clear() }}",
    "{% set a = [3, 1] %}{{ a.reverse() }}",
    "{% set a = [3, 1] %}{{ a.sort() }}",
    "{% set a = [3, 1] %}[{{ a.append }}]{{ a }}",
    "{{ [1, 2].nosuch() }}",
    ("{{ messages.index(messages[1]) }} {{ messages.count(messages[0]) }}",
     {"messages": [{"role": "user"}, {"role": "assistant"}]}),
    "{{ (1, 2, 1).count(1) }} {{ (1, 2).index(2) }}",
    "{{ (1, 2).copy() }}",
    "{{ [1, 2, 3].index(2, -5, 10) }} {{ [1, 2, 3].index(3, -1) }}",
    "{{ [1, 2, 3].index(3, 0, -1) }}",
    "{{ ['a', 'b'].index('a', 1) }}",
    "{{ [1, 2].count() }}",
    "{{ [[1], [1]].count([1]) }} {{ [{'a': 1}].index({'a': 1}) }}",
]

DICT_CASES = [
    "{{ {'a': 1}.get('a') }} {{ {'a': 1}.get('b') }} {{ {'a': 1}.get('b', 'dflt') }}",
    "{{ {1: 'one'}.get(1) }} {{ {1: 'one'}.get(1.0) }} {{ {1: 'one'}.get(true) }} "
    "{{ {1: 'one'}.get('1') }}",
    "{{ {'a': 1}.get() }}",
    "{{ {'a': 1}.get([1]) }}",
    "{% for k, v in {'b': 1, 'a': 2, 3: 'c'}.items() %}{{ k }}={{ v }};{% endfor %}",
    "{{ {'b': 1, 'a': 2}.keys()|list }} {{ {'b': 1, 'a': 2}.values()|list }}",
    "{{ {'b': 1, 'a': 2}.items()|list }}",
    "{{ {}.items()|list }} {{ {}.keys()|list|length }}",
    "{% set d = {'a': [1]} %}{% set c = d.copy() %}{{ c }} {{ c == d }} {{ c is mapping }}",
    "{% set d = {'a': 1} %}{{ d.pop('a') }}",
    "{% set d = {'a': 1} %}{{ d.setdefault('b', 2) }}",
    "{% set d = {'a': 1} %}{{ d.update({'b': 2}) }}",
    "{% set d = {'a': 1} %}{{ d.clear() }}",
    "{% set d = {'a': 1} %}{{ d.popitem() }}",
    "{{ {'a': 1}.nosuch() }}",
    "{{ {'a': 1}.get('a', 2, 3) }}",
    "{{ {'a': none}.get('a', 'x') }} {{ {'a': 1}['get']('a') }} {{ {'get': 5}['get'] }}",
    "{{ {'items': 1}.items()|list }} {{ {'keys': 1}['keys'] }}",
    "{% set d = {'b': 1} %}{% set c = d.copy() %}{{ c is not sameas d }} {{ c.items()|list }}",
    ("{{ message.get('content', '') }}|{{ message.get('tool_calls', [])|length }}",
     {"message": {"role": "user", "content": "hi"}}),
    ("{% for k, v in tool.parameters.properties.items() %}{{ k }}:{{ v.type }} {% endfor %}",
     {"tool": {"parameters": {"properties": {"city": {"type": "string"},
                                             "days": {"type": "integer"}}}}}),
    ("{{ d.keys()|join(',') }}", {"d": {"x": 1, "y": 2}}),
]

KEY_CASES = [
    "{{ {1: 'a', 2: 'b'}[1] }} {{ {1: 'a'}[1.0] }} {{ {1: 'a'}[true] }}",
    "{{ {1: 'a', true: 'b'} }}",
    "{{ {true: 'a', 1: 'b', 1.0: 'c'} }}",
    "{{ {0: 'z', false: 'f'}[0] }} {{ {0: 'z'}[false] }}",
    "{{ {none: 'n'}[none] }} {{ {none: 'n'} }}",
    "{{ {(1, 2): 'pair'}[(1, 2)] }} {{ {(1, 2): 'pair'} }}",
    "{{ {1.5: 'x', 2: 'y'}[1.5] }} {{ {2.0: 'y'} }} {{ {2.0: 'y'}[2] }}",
    "{{ {'1': 'str', 1: 'int'}['1'] }} {{ {'1': 'str', 1: 'int'}[1] }} "
    "{{ {'1': 'str', 1: 'int'}|length }}",
    "{{ {[1]: 'list'} }}",
    "{{ {{'k': 1}: 'dict'} }}",
    "{{ {1: 'a'}[2] }}|",
    "{{ {1: 'a'}[[1]] }}|",
    "{{ 1 in {1: 'a'} }} {{ true in {1: 'a'} }} {{ '1' in {1: 'a'} }} {{ 2.0 in {2: 'a'} }}",
    "{{ [1] in {1: 'a'} }}",
    "{% for k in {3: 'c', 1: 'a', 2: 'b'} %}{{ k }}{% endfor %}",
    "{{ {3: 'c', 1: 'a', 2: 'b'}|dictsort }}",
    "{{ {'b': 1, 'a': 2}|dictsort }} {{ {'b': 1, 'a': 2}|items|list }}",
    "{{ {1: 'a', 'b': 2}|dictsort }}",
    "{{ {1: 'a', 2.5: 'b', true: 'c', none: 'd', 'e': 'f'}|tojson }}",
    "{{ {false: 0, 0.5: 1}|tojson }}",
    "{{ {2: 'b', 1: 'a'}|tojson(sort_keys=true) }}",
    "{{ {(1, 2): 'x'}|tojson }}",
    "{{ {1: {2: [3]}}|tojson(indent=2) }}",
    "{{ {1: 'a'} == {1.0: 'a'} }} {{ {1: 'a'} == {'1': 'a'} }} {{ {true: 1} == {1: 1} }}",
    "{{ dict({1: 'a'}, b=2) }}",
    "{% set d = {1: 'a'} %}{{ d[1] ~ d.get(1) }}",
    "{{ {1: 'a', 2: 'b'}|length }} {{ {1: 'a'}.keys()|first }}",
    "{{ {1: 'a'}|string }} {{ {'x': 1} ~ '' }}",
    "{{ {(1, 'a'): 1, (1, 'b'): 2}[(1, 'b')] }}",
    "{{ (1, 2) }} {{ (1,) }} {{ () }} {{ [(1, 2)] }}",
    "{{ (1, 2) == [1, 2] }} {{ (1, 2) == (1, 2) }}",
    ("{% set ns = namespace(by_id={}) %}{% for m in msgs %}"
     "{% set ns.by_id = dict(ns.by_id.items()|list + [(m.id, m.name)]) %}{% endfor %}"
     "{{ ns.by_id }} {{ ns.by_id[2] }} {{ ns.by_id|tojson }}",
     {"msgs": [{"id": 1, "name": "a"}, {"id": 2, "name": "b"}]}),
    "{{ dict([(1, 'a'), ('b', 2)]) }} {{ dict([[none, 0]]) }}",
    "{{ dict([(1, 2, 3)]) }}",
    ("{{ ids[7] }} {{ ids.get(8, '?') }}", {"ids": {"7": "seven"}}),
]


def cases():
    groups = [("str", STR_CASES), ("format", FORMAT_CASES), ("list", LIST_CASES),
              ("dict", DICT_CASES), ("keys", KEY_CASES)]
    for group, items in groups:
        for item in items:
            template, context = (item, {}) if isinstance(item, str) else item
            yield group, template, context


def render(env, template, context):
    try:
        return {"output": env.from_string(template).render(**context)}
    except Exception as e:  # noqa: BLE001 - any error the template raises is the expectation
        return {"error": f"{type(e).__name__}: {e}"}


def main():
    out = Path(sys.argv[1]) if len(sys.argv) > 1 else ROOT / "tests/fixtures/template_methods.json"
    env = environment()
    rows = []
    for group, template, context in cases():
        row = {"group": group, "template": template, "context": context}
        row.update(render(env, template, context))
        rows.append(row)
    out.write_text(json.dumps({"jinja2": jinja2.__version__, "cases": rows}, indent=1,
                              ensure_ascii=False) + "\n")
    errors = sum("error" in r for r in rows)
    print(f"{out}: {len(rows)} cases ({errors} raise)")


if __name__ == "__main__":
    main()

#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""The documentation check: links resolve and citations point at texts the repository carries.

1. Every link in README.md and docs/**/*.md to a file of the repository resolves: the file
   exists and, with #anchor, the anchor does (a heading's GitHub slug or an <a id="...">).
2. Every `docs/<page>.md#<anchor>` that a source file, script or build file cites exists.
3. No file cites a text the repository does not carry: the design notes and their guideline
   numbers, the reference texts' file ids and errata ids. Cite docs/architecture.md or
   docs/references.md by anchor instead, or say the thing itself.

Usage: check_docs.py [ROOT] (default: the repository above this script), or --self-test
(a scratch tree with one problem of each kind must give exactly those). Prints one line
`path:line: reason` per problem; exit status 0 clean, 1 problems found."""
import os
import re
import subprocess
import sys

# Citations of texts outside the repository (see the docstring). The patterns are built
# from pieces so this file does not match itself.
ABSENT = [
    (re.compile('DESIGN' + r'\.md'), 'cites the design note, which the repository does not carry'),
    (re.compile('STYLE' + r'\.md'), 'cites the style note, which the repository does not carry'),
    (re.compile('ERR' + 'ATA'), 'cites the errata file, which the repository does not carry'),
    (re.compile('seeds' + '/'), 'cites the reference texts folder, which the repository does not carry'),
    (re.compile(r'\bf' + r'00[0-9]\b'), "cites a reference text by file id (use its key, docs/references.md#sources)"),
    (re.compile(r'(?<![\w#-])' + 'G' + r'(1[0-4]|[1-9])\b(?![\w.])'),
     'cites a guideline by number (use docs/architecture.md#rule-...)'),
    (re.compile(r'(?<![\w#/-])' + 'A' + r'(0[1-9]|[12][0-9]|3[0-4])\b(?!\w)'),
     'cites an erratum by id (use docs/references.md#<anchor>)'),
]
TEXT_FILE = re.compile(r'\.(cc|hh|h|c|py|sh|md|build|txt|json|options)$|meson_options')
CITATION = re.compile(r'\bdocs/([\w./-]+\.md)#([\w-]+)')
LINK = re.compile(r'(?<!!)\[[^\]]*\]\(([^)\s]+)\)')
ANCHOR_TAG = re.compile(r'<a\s+(?:id|name)="([^"]+)"')
SELF = os.path.join('scripts', 'check_docs.py')


def repo_files(root):
    """Tracked files (git), else every file outside build and result folders."""
    try:
        out = subprocess.run(['git', '-C', root, 'ls-files'], capture_output=True, text=True,
                             check=True).stdout.split('\n')
        files = [f for f in out if f]
        if files:
            return files
    except (OSError, subprocess.CalledProcessError):
        pass
    files = []
    for d, dirs, names in os.walk(root):
        rel = os.path.relpath(d, root)
        dirs[:] = [x for x in dirs if not (x.startswith('.') or x.startswith('build')
                                           or (rel == '.' and x == 'results'))]
        files += [os.path.normpath(os.path.join(rel, n)) for n in names]
    return files


def slug(heading):
    """GitHub's anchor for a heading: lower case, punctuation dropped, spaces to hyphens."""
    text = re.sub(r'\[([^\]]*)\]\([^)]*\)', r'\1', heading.strip().lower())
    text = re.sub(r'[^\w\- ]', '', text)
    return text.replace(' ', '-')


def prose_lines(text):
    """(line number, line) outside fenced code blocks, with inline code removed."""
    fenced = False
    for number, line in enumerate(text.split('\n'), 1):
        if line.lstrip().startswith('```'):
            fenced = not fenced
            continue
        if not fenced:
            yield number, re.sub(r'`[^`]*`', '', line)


def anchors(path, cache={}):
    if path not in cache:
        found, seen = set(), {}
        with open(path, encoding='utf-8') as f:
            text = f.read()
        for _, line in prose_lines(text):
            found.update(ANCHOR_TAG.findall(line))
        fenced = False
        for line in text.split('\n'):
            if line.lstrip().startswith('```'):
                fenced = not fenced
            m = re.match(r'^#{1,6} (.*)', line)
            if m and not fenced:
                base = slug(m.group(1))
                n = seen.get(base, 0)
                seen[base] = n + 1
                found.add(base if n == 0 else f'{base}-{n}')
        cache[path] = found
    return cache[path]


def check_target(root, source_dir, target, where, problems):
    path, _, anchor = target.partition('#')
    full = os.path.normpath(os.path.join(root, source_dir, path)) if path else \
        os.path.join(root, where[0])
    if not os.path.exists(full):
        problems.append(f'{where[0]}:{where[1]}: link to {target}: no such file')
    elif anchor and full.endswith('.md') and anchor not in anchors(full):
        problems.append(f'{where[0]}:{where[1]}: link to {target}: no anchor #{anchor}')


def problems_in(root):
    problems = []
    files = repo_files(root)
    for rel in files:
        full = os.path.join(root, rel)
        if not os.path.isfile(full) or rel.startswith('fuzz/corpus/') or \
                not TEXT_FILE.search(rel):
            continue
        try:
            with open(full, encoding='utf-8') as f:
                text = f.read()
        except UnicodeDecodeError:
            continue
        is_doc = rel.endswith('.md') and (rel == 'README.md' or rel.startswith('docs/'))
        if is_doc:
            for number, line in prose_lines(text):
                for target in LINK.findall(line):
                    if re.match(r'^[a-z]+:', target):
                        continue
                    check_target(root, os.path.dirname(rel), target, (rel, number), problems)
        if rel == SELF:
            continue
        for number, line in enumerate(text.split('\n'), 1):
            for page, anchor in CITATION.findall(line):
                check_target(root, '', f'docs/{page}#{anchor}', (rel, number), problems)
            for pattern, reason in ABSENT:
                m = pattern.search(line)
                if m:
                    problems.append(f'{rel}:{number}: "{m.group(0)}" {reason}')
    return problems


def self_test():
    """One problem of each kind in a scratch tree (not a git checkout): each must be found."""
    import tempfile
    cases = {
        'README.md': '# t\n\n## Good heading\n\n[ok](docs/a.md#kept) [ok](#good-heading)\n'
                     '[gone](docs/missing.md) [bad anchor](docs/a.md#nowhere)\n'
                     '`[in code](docs/missing.md)`\n',
        'docs/a.md': '<a id="kept"></a>\n# A\n\n```\n[fenced](nowhere.md)\n```\n',
        'src/x.cc': '// see docs/a.md#kept and docs/a.md#lost\n// per ' + 'STYLE' + '.md G' + '7\n'
                    '// ERR' + 'ATA A' + '10; f' + '001 §3.6\n// memory order A1 pairs with R1\n',
    }
    expected = {('README.md', 6, 'no such file'), ('README.md', 6, 'no anchor #nowhere'),
                ('src/x.cc', 1, 'no anchor #lost'), ('src/x.cc', 2, 'style note'),
                ('src/x.cc', 2, 'guideline by number'), ('src/x.cc', 3, 'errata file'),
                ('src/x.cc', 3, 'erratum by id'), ('src/x.cc', 3, 'file id')}
    with tempfile.TemporaryDirectory() as root:
        for rel, text in cases.items():
            os.makedirs(os.path.join(root, os.path.dirname(rel)), exist_ok=True)
            with open(os.path.join(root, rel), 'w', encoding='utf-8') as f:
                f.write(text)
        found = problems_in(root)
    missing = [e for e in expected
               if not any(p.startswith(f'{e[0]}:{e[1]}:') and e[2] in p for p in found)]
    extra = [p for p in found
             if not any(p.startswith(f'{e[0]}:{e[1]}:') and e[2] in p for e in expected)]
    for e in missing:
        print(f'self-test: not found: {e}')
    for p in extra:
        print(f'self-test: unexpected: {p}')
    print(f'self-test: {len(expected) - len(missing)} of {len(expected)} problems found, '
          f'{len(extra)} unexpected')
    return 1 if missing or extra else 0


def main():
    if sys.argv[1:] == ['--self-test']:
        return self_test()
    root = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else
                           os.path.join(os.path.dirname(__file__), '..'))
    problems = problems_in(root)
    for p in problems:
        print(p)
    if problems:
        print(f'check_docs.py: {len(problems)} problem(s)', file=sys.stderr)
    return 1 if problems else 0


if __name__ == '__main__':
    sys.exit(main())

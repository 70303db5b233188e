use super::hidden_code;
use crate::policy::shell::command::command_view;
use crate::policy::shell::lexer::lex;

/// The hazard of the command or of any wrapper in front of it.
fn check(cmd: &str) -> Option<String> {
    let lexed = lex(cmd);
    let view = command_view(&lexed.script.segments[0].words);
    hidden_code(view.name.unwrap_or_default(), view.args).or_else(|| {
        view.wrappers
            .iter()
            .zip(&view.wrapper_argv)
            .find_map(|(w, argv)| hidden_code(w, argv))
    })
}

#[test]
fn finds_hidden_programs() {
    for cmd in [
        "find . -name x -exec id \\;",
        "find . -fprint /tmp/out",
        "find . -delete",
        "fd -x rm",
        "sed 's/a/b/e' f",
        "sed -n -e p -e 'w out' f",
        "sed --expression='1e id' f",
        "sed --expr='1e id' f",
        "sed -ne'1e id' f",
        "sed -n -e'1e id' f",
        "sed -nEe '1e id' f",
        "sed -f script.sed f",
        "sed -nf s.sed f",
        "sed --fi=s.sed f",
        "awk 'BEGIN{system(\"id\")}'",
        "awk -F: '{print | \"sh\"}' f",
        "awk -f prog.awk f",
        "gawk -l filefuncs 1",
        "awk -v x=1 '{print > \"out\"}'",
        "gawk -e 'BEGIN{system(\"id\")}'",
        "gawk --source='BEGIN{system(\"id\")}'",
        "gawk --sour='BEGIN{system(\"id\")}'",
        "mawk -W exec /tmp/e.awk",
        "tar --to-command='sh -c id' -xf a.tar",
        "tar --to-comm='sh -c id' -xf a.tar",
        "tar -xf a.tar --checkpoint=1 --checkpoint-action=exec=id",
        "tar -xf a.tar --checkpoint-act=exec=id",
        "tar -I 'sh -c id' -xf a.tar",
        "tar xIf zstd a.tar",
        "tar --use-comp=x -cf a.tar .",
        "rg --pre ./x.sh pattern",
        "rg --pre=./x pattern",
        "sort --compress-program=sh f",
        "sort --compress-prog=sh f",
        "zip -T -TT 'sh -c id' a.zip f",
        "zip --unzip-com='sh -c id' a.zip f",
        "vim -c '!id' f",
        "vim +'!id' f",
        "nvim --cmd x f",
        "vi -es < x",
        "editor -c '!id' f",
        "ed -s '!id'",
        "less '+!id' f",
        "more +/x f",
        "man -P 'sh -c id' ls",
        "gdb -batch -ex 'shell id'",
        "gdb -batch -eval-command='shell id'",
        "gdb --eval-comm='shell id'",
        "strace -o '!touch x' true",
        "ltrace --output='|sh' true",
        "enable -f ./x.so x",
        "mapfile -C cb -c 1 arr",
        "hash -p /bin/bash ls",
        "shopt -s expand_aliases",
        "shopt -qs expand_aliases",
        "shopt -so posix",
        "set -o posix",
        "set -k",
        "let 'x=a[$(id)]'",
        "test -v 'a[$(id)]'",
        "[[ -v x ]]",
        "run-parts ./d",
        "crontab f",
        "at now",
        "make --eval='x:;id'",
        "make SHELL=./x build",
        // Assignment operators: the variable is still SHELL; `!=` runs its value at start.
        "make test 'SHELL:=./p'",
        "make test SHELL+=x",
        "make test 'X!=bash p'",
        "make test 'SHELL :=./p'",
        "uv pip list --python ./p",
        "uv pip list -p ./p",
        "uv venv --python=../x/python",
        "make test -f ./evil.mk",
        "make -C ../other test",
        "cargo build --config build.rustc-wrapper=./x",
        "go build -toolexec=./x",
        "go vet -vettool=./x",
        "go run example.com/x@latest",
        "npm test --script-shell=./x",
        "pnpm exec sh -c id",
        "yarn node -e x",
        "uv run bash -c id",
        "uv tool run ruff",
        "python3 -m timeit 'import os'",
        "npx cowsay",
        "tmux new -d id",
        "parallel echo ::: a",
        "sqlite3 db '.shell id'",
        "sqlite3 db \".once '|id'\"",
        "sqlite3 -cmd '.sys id' db",
    ] {
        assert!(check(cmd).is_some(), "{cmd}");
    }
}

#[test]
fn read_only_uses_pass() {
    for cmd in [
        "find . -name '*.rs' -print",
        "sed 's/a/b/g' f",
        "sed -n '1,5p' f",
        "sed -i 's/a/b/' f",
        "sed -ne '/x/p' f",
        "awk '{print $1}' f",
        "awk -F, '$3 > 10 {print $1}' f",
        "tar -xzf a.tar.gz",
        "tar czf a.tgz dir",
        "tar -tvf a.tar",
        "rg -n TODO",
        "sort -u f",
        "zip -r a.zip dir",
        "vim f",
        "less f",
        "man ls",
        "crontab -l",
        "make test",
        "uv venv --python 3.12",
        "cargo build --release",
        "go build ./...",
        "python3 -m pytest",
        "npm test",
        "npm run build",
        "git grep -n TODO",
        "sqlite3 db 'select 1'",
        "strace -o trace.txt true",
    ] {
        assert_eq!(check(cmd), None, "{cmd}");
    }
}

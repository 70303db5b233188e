//! What the shell lexer produces: scripts of simple-command segments, with every nested script
//! (substitutions, function bodies, heredoc bodies) kept where the rules can walk into it.

use super::marks::{Marks, marks};

/// How a segment is joined to the one before it.
/// The value a `for` loop's variable is given in the tree: each word of its list in turn, so
/// no one literal.
pub const FOR_LIST: &str = "<for list>";

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Connector {
    /// The first segment of a script.
    Start,
    /// `;`
    Semicolon,
    /// A newline.
    Newline,
    /// `&&`
    And,
    /// `||`
    Or,
    /// `|` or `|&`: this segment reads the previous one's output.
    Pipe,
    /// `&`: the previous segment went to the background.
    Background,
}

/// One piece of a word, after quote removal.
#[derive(Clone, Debug, PartialEq)]
pub enum WordPart {
    /// Literal text. `quoted` when it came from quotes or a backslash (so it never globs).
    Literal { text: String, quoted: bool },
    /// `$name`, `${name}`, `${name:?}`, `${#name}`…; `op` is whatever follows the name inside braces.
    Param {
        name: String,
        op: String,
        braced: bool,
        quoted: bool,
    },
    /// `$(…)` or `` `…` ``.
    CommandSub { script: Box<Script>, quoted: bool },
    /// `<(…)` or `>(…)`.
    ProcessSub { script: Box<Script> },
    /// `$((…))`.
    Arithmetic { text: String },
    /// An unquoted leading `~` or `~user`.
    Tilde { user: String },
}

/// A word's parts: most words are one literal, held inline.
pub type Parts = smallvec::SmallVec<[WordPart; 1]>;

/// A shell word: its parts, and whether unquoted glob or brace expansion characters appear in
/// it. Its text (quotes removed, expansions as written) is computed once, since every rule
/// reads it.
#[derive(Clone, Debug, PartialEq, Default)]
pub struct Word {
    pub parts: Parts,
    pub glob: bool,
    pub brace: bool,
    /// The rendered text, kept only when it differs from a single literal part's text (most
    /// words are one literal: they are not copied twice).
    rendered: Option<Box<str>>,
    literal: bool,
    /// What its text mentions (secret-path substrings, raw sockets), found once here for every
    /// rule that asks.
    pub marks: Marks,
}

impl Word {
    /// A word from its parts.
    #[must_use]
    pub fn new(parts: Parts, glob: bool, brace: bool) -> Self {
        let literal =
            !glob && !brace && parts.iter().all(|p| matches!(p, WordPart::Literal { .. }));
        let rendered = match parts.as_slice() {
            [WordPart::Literal { .. }] => None,
            _ => Some(render(&parts).into_boxed_str()),
        };
        let mut word = Word {
            parts,
            glob,
            brace,
            rendered,
            literal,
            marks: Marks::default(),
        };
        word.marks = marks(word.text());
        word
    }

    /// A plain literal word.
    #[must_use]
    pub fn plain(text: &str) -> Self {
        Word::new(
            smallvec::smallvec![WordPart::Literal {
                text: text.to_string(),
                quoted: false,
            }],
            false,
            false,
        )
    }

    /// The word's value when it holds no expansion at all: what the program receives.
    #[must_use]
    pub fn literal(&self) -> Option<&str> {
        self.literal.then(|| self.text())
    }

    /// Whether any part expands at run time (parameters, substitutions, tilde, globs, braces).
    #[must_use]
    pub fn has_expansion(&self) -> bool {
        !self.literal
    }

    /// The word with quotes removed and expansions kept as written (`$HOME`, `~`, `$(…)`):
    /// the form path rules compare against.
    #[must_use]
    pub fn text(&self) -> &str {
        match (&self.rendered, self.parts.first()) {
            (Some(text), _) => text,
            (None, Some(WordPart::Literal { text, .. })) => text,
            (None, _) => "",
        }
    }

    /// Scripts nested in this word (command and process substitutions).
    pub fn nested_scripts(&self) -> impl Iterator<Item = &Script> {
        self.parts.iter().filter_map(|p| match p {
            WordPart::CommandSub { script, .. } | WordPart::ProcessSub { script } => {
                Some(script.as_ref())
            }
            _ => None,
        })
    }

    /// Whether the word holds a command or process substitution.
    #[must_use]
    pub fn has_substitution(&self) -> bool {
        self.nested_scripts().next().is_some()
    }
}

fn render(parts: &[WordPart]) -> String {
    let mut out = String::new();
    for part in parts {
        match part {
            WordPart::Literal { text, .. } => out.push_str(text),
            WordPart::Param {
                name, op, braced, ..
            } => {
                if *braced {
                    out.push_str("${");
                    out.push_str(name);
                    out.push_str(op);
                    out.push('}');
                } else {
                    out.push('$');
                    out.push_str(name);
                }
            }
            WordPart::CommandSub { .. } => out.push_str("$(…)"),
            WordPart::ProcessSub { .. } => out.push_str("<(…)"),
            WordPart::Arithmetic { text } => {
                out.push_str("$((");
                out.push_str(text);
                out.push_str("))");
            }
            WordPart::Tilde { user } => {
                out.push('~');
                out.push_str(user);
            }
        }
    }
    out
}

/// `NAME=value` before a command (or alone).
#[derive(Clone, Debug, PartialEq)]
pub struct Assignment {
    pub name: String,
    pub value: Word,
    /// A plain `NAME=value` that sets the whole value: not an append (`NAME+=…`), an element
    /// (`a[i]=…`) or a loop's variable.
    pub whole: bool,
}

/// The kind of a redirection operator.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RedirectOp {
    /// `<`
    Read,
    /// `>`, `>|`, `&>`
    Write,
    /// `>>`, `&>>`
    Append,
    /// `<>`
    ReadWrite,
    /// `>&` / `<&` (fd duplication, or a file for `>&file`)
    Duplicate,
    /// `<<` / `<<-`
    Heredoc,
    /// `<<<`
    HereString,
}

/// One redirection of a segment.
#[derive(Clone, Debug, PartialEq)]
pub struct Redirect {
    /// The explicit file descriptor (`2>`), if any.
    pub fd: Option<u32>,
    pub op: RedirectOp,
    /// The target word; for a heredoc, its delimiter.
    pub target: Word,
    /// The heredoc's body, parsed for substitutions when its delimiter was unquoted.
    pub heredoc: Option<Word>,
}

impl Redirect {
    /// Whether this redirection writes somewhere other than a discard (`/dev/null`, or another
    /// descriptor such as `2>&1`).
    #[must_use]
    pub fn writes_output(&self) -> bool {
        match self.op {
            RedirectOp::Write | RedirectOp::Append | RedirectOp::ReadWrite => {
                self.target.literal() != Some("/dev/null")
            }
            RedirectOp::Duplicate => match self.target.literal() {
                Some(t) => !(t == "-" || t.chars().all(|c| c.is_ascii_digit())),
                None => true,
            },
            RedirectOp::Read | RedirectOp::Heredoc | RedirectOp::HereString => false,
        }
    }

    /// Whether this redirection feeds text to the command's standard input from the script
    /// itself (heredoc or here-string).
    #[must_use]
    pub fn feeds_inline_input(&self) -> bool {
        matches!(self.op, RedirectOp::Heredoc | RedirectOp::HereString)
    }
}

/// One simple command: assignments, words and redirections, and how it joins the previous one.
#[derive(Clone, Debug, PartialEq)]
pub struct Segment {
    pub connector: Connector,
    pub assignments: Vec<Assignment>,
    pub words: Vec<Word>,
    pub redirects: Vec<Redirect>,
    /// Words that are evaluated but are not a command (a `for` list, a `case` subject).
    pub evaluated: Vec<Word>,
    /// The command strings its program runs as scripts (`bash -c '…'`, `eval …`, `watch …`),
    /// lexed once by the analysis (empty straight out of the lexer).
    pub inline: Vec<InlineScript>,
}

/// A command string a segment's program runs as a script, lexed one level deeper.
#[derive(Clone, Debug, PartialEq)]
pub struct InlineScript {
    /// The script (lenient when it did not lex).
    pub script: Script,
    /// Whether it lexed strictly.
    pub lexes: bool,
}

impl Segment {
    pub(crate) fn new(connector: Connector) -> Self {
        Segment {
            connector,
            assignments: Vec::new(),
            words: Vec::new(),
            redirects: Vec::new(),
            evaluated: Vec::new(),
            inline: Vec::new(),
        }
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.assignments.is_empty()
            && self.words.is_empty()
            && self.redirects.is_empty()
            && self.evaluated.is_empty()
    }

    /// Every word of the segment: command words, assignment values, redirect targets, heredoc
    /// bodies and evaluated words.
    pub fn all_words(&self) -> impl Iterator<Item = &Word> {
        self.words.iter().chain(self.other_words())
    }

    /// The words besides the command's own: assigned values, redirect targets and heredocs,
    /// and what is evaluated.
    pub fn other_words(&self) -> impl Iterator<Item = &Word> {
        self.assignments
            .iter()
            .map(|a| &a.value)
            .chain(
                self.redirects
                    .iter()
                    .flat_map(|r| std::iter::once(&r.target).chain(r.heredoc.iter())),
            )
            .chain(self.evaluated.iter())
    }

    /// Scripts nested anywhere in this segment.
    pub fn nested_scripts(&self) -> impl Iterator<Item = &Script> {
        self.all_words().flat_map(Word::nested_scripts)
    }
}

/// `name() { body }`
#[derive(Clone, Debug, PartialEq)]
pub struct FunctionDef {
    pub name: String,
    pub body: Script,
}

/// Shapes that make a command more than one plain simple command.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Features {
    pub subshell: bool,
    pub group: bool,
    pub compound: bool,
    pub comment: bool,
    pub function: bool,
    /// Something was sent to the background with `&`.
    pub background: bool,
    /// A loop that cannot end by construction (`while true`, `until false`, `for ((;;))`).
    pub endless_loop: bool,
    /// An arithmetic command (`(( … ))`, `for (( … ))`) or an array subscript assignment
    /// (`a[…]=`): bash evaluates strings as arithmetic there.
    pub arithmetic: bool,
}

/// A lexed command line: its segments in order, the functions it defines, and its shape.
#[derive(Clone, Debug, PartialEq, Default)]
pub struct Script {
    pub segments: Vec<Segment>,
    pub functions: Vec<FunctionDef>,
    pub features: Features,
}

impl Script {
    /// Calls `visit` for this script and every script nested in it — substitutions, function
    /// bodies and the command strings its programs run (`bash -c '…'`) — outermost first.
    pub fn walk<'a>(&'a self, visit: &mut dyn FnMut(&'a Script)) {
        visit(self);
        for segment in &self.segments {
            for nested in segment.nested_scripts() {
                nested.walk(visit);
            }
            for inline in &segment.inline {
                inline.script.walk(visit);
            }
        }
        for function in &self.functions {
            function.body.walk(visit);
        }
    }
}

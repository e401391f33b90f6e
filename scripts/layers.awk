# lint:layers' reader of one Rust file (scripts/lint.sh): prints "FILE: crate::NAME" for each
# path that reaches, from the crate root, a name in `bad` (space-separated: the subsystems above
# the file's own, and the names the crate root imports from them, which its descendants can
# name as crate::NAME too). Paths are read the way rustc reads them, not line by line:
#   - whitespace and line breaks inside a path do not hide it (`crate::\n    fprobe`);
#   - `use crate::{sys, fprobe::Fprobes}` names fprobe: each top-level name of a group counts;
#   - `super::` repeated `depth` times (the file's depth below the crate root) or more is the
#     crate root (`super::super::fprobe` in src/fgraph/capi.rs), as is `$crate::` in a macro.
# Comments do not count (a line's text from a `//` at its start or after a blank).
#
# Usage: awk -v depth=N -v bad="fprobe events Fprobes" -f scripts/layers.awk FILE
BEGIN {
	n = split(bad, names, " ")
	for (i = 1; i <= n; i++)
		isbad[names[i]] = 1
}
{
	line = $0
	sub(/(^|[ \t])\/\/.*/, "", line)
	text = text line " "
}
function ident(s, at,    m) {
	if (match(substr(s, at), /^[A-Za-z_][A-Za-z0-9_]*/))
		return substr(s, at, RLENGTH)
	return ""
}
function report(name) {
	if (name in isbad)
		print FILENAME ": crate::" name
}
END {
	gsub(/[ \t\r\n]+/, "", text)
	# Runs of `super::` that climb to the root become `crate::`.
	out = ""
	while (match(text, /(super::)+/)) {
		k = RLENGTH / 7
		out = out substr(text, 1, RSTART - 1) (k >= depth ? "crate::" : substr(text, RSTART, RLENGTH))
		text = substr(text, RSTART + RLENGTH)
	}
	text = out text
	while ((p = index(text, "crate::")) > 0) {
		text = substr(text, p + 7)
		if (substr(text, 1, 1) != "{") {
			report(ident(text, 1))
			continue
		}
		# A group: the names right after its `{` and after each of its top-level commas.
		lvl = 0
		for (i = 1; i <= length(text); i++) {
			c = substr(text, i, 1)
			if (c == "{") {
				lvl++
				if (lvl == 1)
					report(ident(text, i + 1))
			} else if (c == "}") {
				if (--lvl == 0)
					break
			} else if (c == "," && lvl == 1) {
				report(ident(text, i + 1))
			}
		}
	}
}

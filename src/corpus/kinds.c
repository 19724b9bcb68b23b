/*
** kinds.c — what a file is, from its name: how it is cut (Markdown,
** source, text) and the media type its records carry (spec §3.8).
** Whether it is text at all is decided from its bytes (index.c).
*/
#include <stddef.h>
#include <string.h>
#include <strings.h>

#include "corpus/kinds.h"

typedef struct kind {
	const char    *ext;     /* without the dot, lower case */
	a2m_chunk_kind chunk;
	const char    *media_type;
} kind;

#define MD  A2M_CHUNK_MARKDOWN
#define SRC A2M_CHUNK_SOURCE
#define TXT A2M_CHUNK_TEXT

static const kind by_ext[] = {
	{"md", MD, "text/markdown"}, {"markdown", MD, "text/markdown"},
	{"mdown", MD, "text/markdown"}, {"mkd", MD, "text/markdown"},
	{"mkdn", MD, "text/markdown"}, {"mdx", MD, "text/markdown"},
	{"c", SRC, "text/x-c"}, {"h", SRC, "text/x-c"},
	{"cc", SRC, "text/x-c++"}, {"cpp", SRC, "text/x-c++"}, {"cxx", SRC, "text/x-c++"},
	{"hh", SRC, "text/x-c++"}, {"hpp", SRC, "text/x-c++"}, {"hxx", SRC, "text/x-c++"},
	{"py", SRC, "text/x-python"}, {"pyi", SRC, "text/x-python"},
	{"js", SRC, "text/javascript"}, {"mjs", SRC, "text/javascript"},
	{"cjs", SRC, "text/javascript"}, {"jsx", SRC, "text/javascript"},
	{"ts", SRC, "text/x-typescript"}, {"tsx", SRC, "text/x-typescript"},
	{"go", SRC, "text/x-go"}, {"rs", SRC, "text/x-rust"}, {"java", SRC, "text/x-java"},
	{"kt", SRC, "text/x-kotlin"}, {"scala", SRC, "text/x-scala"},
	{"swift", SRC, "text/x-swift"}, {"cs", SRC, "text/x-csharp"},
	{"rb", SRC, "text/x-ruby"}, {"php", SRC, "text/x-php"}, {"pl", SRC, "text/x-perl"},
	{"pm", SRC, "text/x-perl"}, {"lua", SRC, "text/x-lua"}, {"r", SRC, "text/x-r"},
	{"jl", SRC, "text/x-julia"}, {"hs", SRC, "text/x-haskell"}, {"ml", SRC, "text/x-ocaml"},
	{"ex", SRC, "text/x-elixir"}, {"exs", SRC, "text/x-elixir"},
	{"erl", SRC, "text/x-erlang"}, {"clj", SRC, "text/x-clojure"},
	{"dart", SRC, "text/x-dart"}, {"zig", SRC, "text/x-zig"},
	{"sh", SRC, "text/x-shellscript"}, {"bash", SRC, "text/x-shellscript"},
	{"zsh", SRC, "text/x-shellscript"}, {"sql", SRC, "application/sql"},
	{"mk", SRC, "text/x-makefile"}, {"cmake", SRC, "text/x-cmake"},
	{"json", SRC, "application/json"}, {"yaml", SRC, "application/yaml"},
	{"yml", SRC, "application/yaml"}, {"toml", SRC, "application/toml"},
	{"xml", SRC, "application/xml"}, {"html", SRC, "text/html"}, {"htm", SRC, "text/html"},
	{"css", SRC, "text/css"}, {"scss", SRC, "text/x-scss"},
	{"csv", TXT, "text/csv"}, {"tsv", TXT, "text/tab-separated-values"},
	{"rst", TXT, "text/x-rst"}, {"adoc", TXT, "text/asciidoc"},
	{"txt", TXT, "text/plain"},
};

/* Files known by their whole name. */
static const kind by_name[] = {
	{"Makefile", SRC, "text/x-makefile"}, {"GNUmakefile", SRC, "text/x-makefile"},
	{"Dockerfile", SRC, "text/x-dockerfile"}, {"CMakeLists.txt", SRC, "text/x-cmake"},
};

void a2m_corpus_kind(const char *name, a2m_chunk_kind *chunk, const char **media_type)
{
	*chunk = A2M_CHUNK_TEXT;
	*media_type = "text/plain";
	for (size_t i = 0; i < sizeof by_name / sizeof *by_name; i++)
		if (strcmp(name, by_name[i].ext) == 0) {
			*chunk = by_name[i].chunk;
			*media_type = by_name[i].media_type;
			return;
		}
	const char *dot = strrchr(name, '.');
	if (!dot || dot == name)
		return;
	for (size_t i = 0; i < sizeof by_ext / sizeof *by_ext; i++)
		if (strcasecmp(dot + 1, by_ext[i].ext) == 0) {
			*chunk = by_ext[i].chunk;
			*media_type = by_ext[i].media_type;
			return;
		}
}

/* The conformance suite on its own, linked from the client and jansson only:
** proof that it needs no server code. Run as `conformance-standalone
** conformance --stdio CMD...`, like `a2m conformance`; the word is optional. */
#include <string.h>

#include "cli/conformance.h"

int main(int argc, char **argv)
{
	int shift = argc > 1 && strcmp(argv[1], "conformance") == 0;
	return a2m_cmd_conformance(argc - shift, argv + shift);
}

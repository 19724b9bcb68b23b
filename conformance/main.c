/*
** main.c — a2m-conformance, the A2M conformance suite as a program of its
** own (suite.h). `a2m conformance ARGS` runs it as `a2m-conformance
** conformance ARGS`; the word is optional.
*/
#include <string.h>

#include "suite.h"

int main(int argc, char **argv)
{
	int shift = argc > 1 && strcmp(argv[1], "conformance") == 0;
	return a2m_cmd_conformance(argc - shift, argv + shift);
}

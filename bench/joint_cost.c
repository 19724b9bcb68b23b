/*
** joint_cost.c — the library's instructions per durable single-record
** remember when the writes come one at a time and when they come in
** batches that share one transaction (server/deferred.c), on a fresh
** SQLite store with synchronous=FULL and group commit. Built and run under
** callgrind by bench/joint-cost.sh; never a test.
**
**   joint_cost DB N G    N writes; G 0: each through a2m_handle_network
**                        (a transaction and a commit each, as before);
**                        G >= 1: G at a time queued and finished together,
**                        as the HTTP binding's threads do
**
** No HTTP: the binding's parse and answer are the same either way.
*/
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "a2m.h"
#include "server/deferred.h"

#define MAX_G 64

int main(int argc, char **argv)
{
	if (argc != 4) {
		fprintf(stderr, "usage: joint_cost DB N G\n");
		return 2;
	}
	int n = atoi(argv[2]), g = atoi(argv[3]);
	if (n < 0 || g < 0 || g > MAX_G) {
		fprintf(stderr, "joint_cost: N >= 0, 0 <= G <= %d\n", MAX_G);
		return 2;
	}
	a2m_config *cfg = NULL;
	a2m *h = NULL;
	char *err = NULL;
	if (a2m_config_new(&cfg) != A2M_OK || a2m_config_set(cfg, "engine", "sqlite") != A2M_OK ||
	    a2m_config_set(cfg, "path", argv[1]) != A2M_OK || a2m_open(cfg, &h, &err) != A2M_OK) {
		fprintf(stderr, "joint_cost: %s\n", err ? err : "cannot open the store");
		return 1;
	}
	void *pending[MAX_G];
	char *replies[MAX_G], msg[512];
	int status[MAX_G], failed = 0;
	for (int i = 0; i < n;) {
		int k = g ? g : 1;
		if (k > n - i)
			k = n - i;
		for (int j = 0; j < k; j++, i++) {
			snprintf(msg, sizeof msg, "{\"jsonrpc\":\"2.0\",\"id\":%d,\"method\":"
				 "\"memory/remember\",\"params\":{\"records\":[{\"content\":\"note %d "
				 "about harbour lanterns and the orchard by the quarry, %d\","
				 "\"tier\":\"semantic\"}]}}", i, i, i % 97);
			replies[j] = NULL;
			pending[j] = NULL;
			int rc = g ? a2m_handle_network_deferred(h, msg, strlen(msg), NULL, &replies[j],
								 &pending[j])
				   : a2m_handle_network(h, msg, strlen(msg), NULL, &replies[j]);
			failed += rc != A2M_OK;
		}
		if (g)
			a2m_deferred_finish(h, pending, replies, status, (size_t)k);
		for (int j = 0; j < k; j++) {
			failed += !replies[j] || !strstr(replies[j], "\"result\"");
			a2m_free(replies[j]);
		}
	}
	a2m_close(h);
	a2m_config_free(cfg);
	printf("joint_cost: %d writes, %d failed\n", n, failed);
	return failed != 0;
}

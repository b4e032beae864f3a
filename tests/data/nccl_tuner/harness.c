/* p2sim's test harness for NCCL's example tuner plugin (plugin.c, vendored beside it unchanged).
 *
 * Usage: harness CONFIG_FILE < queries, one query a line: "collective nBytes nNodes nRanks"
 * (collective as the file names it: allreduce, allgather, reducescatter, broadcast, reduce).
 * Prints "configs N" (the rules the plugin loaded), then per query "algorithm protocol channels"
 * as NCCL would run it after the plugin: the (algorithm, protocol) whose cost the plugin set to 0
 * ("none none" where no rule matched), and the channel count NCCL keeps, which is whatever the
 * plugin returned in *nChannels (ncclGetAlgoInfo in NCCL's src/enqueue.cc: a non-zero count from
 * the tuner replaces NCCL's own).  Every cost starts at 1, none marked NCCL_ALGO_PROTO_IGNORE. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "plugin.c"

static int collective(const char* name, ncclFunc_t* out) {
  static const char* names[] = {"broadcast", "reduce", "allgather", "reducescatter", "allreduce"};
  static const ncclFunc_t funcs[] = {ncclFuncBroadcast, ncclFuncReduce, ncclFuncAllGather, ncclFuncReduceScatter,
                                     ncclFuncAllReduce};
  for (int i = 0; i < 5; i++) {
    if (strcmp(name, names[i]) == 0) {
      *out = funcs[i];
      return 1;
    }
  }
  return 0;
}

int main(int argc, char** argv) {
  if (argc != 2) {
    fprintf(stderr, "usage: %s CONFIG_FILE < queries\n", argv[0]);
    return 2;
  }
  setenv("NCCL_TUNER_CONFIG_FILE", argv[1], 1);
  char name[64];
  size_t nBytes, nNodes, nRanks;
  int first = 1;
  while (scanf("%63s %zu %zu %zu", name, &nBytes, &nNodes, &nRanks) == 4) {
    ncclFunc_t func;
    if (!collective(name, &func)) {
      fprintf(stderr, "unknown collective %s\n", name);
      return 2;
    }
    /* NCCL initialises the tuner once per communicator: its node and rank counts */
    void* ctx = NULL;
    if (pluginInit(&ctx, 0, nRanks, nNodes, NULL, NULL, NULL) != ncclSuccess) return 1;
    if (first) {
      printf("configs %d\n", ((TunerContext*)ctx)->numConfigs);
      first = 0;
    }
    float table[NCCL_NUM_ALGORITHMS][NCCL_NUM_PROTOCOLS];
    for (int a = 0; a < NCCL_NUM_ALGORITHMS; a++)
      for (int p = 0; p < NCCL_NUM_PROTOCOLS; p++) table[a][p] = 1.0f;
    int nChannels = 0; /* ncclGetAlgoInfo's nMaxChannels before the call */
    if (pluginGetCollInfo(ctx, func, nBytes, 1, (float**)table, NCCL_NUM_ALGORITHMS, NCCL_NUM_PROTOCOLS, 0,
                          &nChannels) != ncclSuccess) return 1;
    const char* algo = "none";
    const char* proto = "none";
    for (int a = 0; a < NCCL_NUM_ALGORITHMS; a++)
      for (int p = 0; p < NCCL_NUM_PROTOCOLS; p++)
        if (table[a][p] == 0.0f) {
          algo = algorithmToString(a);
          proto = protocolToString(p);
        }
    printf("%s %s %d\n", algo, proto, nChannels);
    pluginFinalize(ctx);
  }
  return 0;
}

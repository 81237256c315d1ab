// The `tensorcut` program's subcommands, one file each; each returns the
// process exit code and reads its own flags.
#ifndef TENSORCUT_TOOLS_SUBCOMMANDS_H_
#define TENSORCUT_TOOLS_SUBCOMMANDS_H_

namespace tc {

int FashionDemo();       // fashion_demo.cc
int OpsDemo();           // ops_demo.cc
int TrainCommand();      // train_command.cc
int ExportCommand();     // train_command.cc
int RunCommand();        // train_command.cc
int PartitionCommand();  // partition_command.cc
int CompareCommand();    // compare_command.cc
int GraphCommand();      // graph_command.cc
int BenchCommand();      // bench_command.cc
int RematCommand();      // remat_command.cc

}  // namespace tc

#endif  // TENSORCUT_TOOLS_SUBCOMMANDS_H_

// Slurm's own spellings, read without Slurm's libraries: the compressed tasks-per-node list
// ("2(x3),1"), the first host of a nodelist ("node[01-03,07],gpu5" -> "node01") and the
// rendezvous port a job's ranks agree on without being told (derived from the job id).
#pragma once

#include <optional>
#include <string>
#include <vector>

namespace ddpdesk::slurm {

// "2(x3),1" -> {2, 2, 2, 1}; nullopt when malformed (empty entries, counts below 1, junk).
std::optional<std::vector<int>> expand_tasks_per_node(const std::string& text);

// The first host of a Slurm hostlist: top-level entries are split on commas outside brackets,
// and in the first entry every bracket group becomes the first number of its first range, as
// written (zero padding kept). nullopt when malformed (unbalanced brackets, empty name).
std::optional<std::string> first_host(const std::string& nodelist);

// MASTER_PORT when none is given: kPortBase + job_id % kPortSpan, so every rank of a job (on
// every node) computes the same port, below Linux's ephemeral range (32768+).
constexpr int kPortBase = 20000;
constexpr int kPortSpan = 10000;
int port_for_job(long long job_id);

}  // namespace ddpdesk::slurm

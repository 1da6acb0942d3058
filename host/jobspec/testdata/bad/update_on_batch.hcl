job "report" {
  type = "batch"

  update {
    max_parallel = 2
  }

  group "run" {
    task "report" {
      driver = "exec"
    }
  }
}

job "yearend" {
  type = "batch"

  periodic {
    cron = "0 0 * DEC-JAN *"
  }

  group "run" {
    task "report" {
      driver = "exec"
    }
  }
}

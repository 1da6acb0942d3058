# A CSI plugin on every node: the hostpath driver of Kubernetes' storage
# SIG, as controller and node plugin in one task (type "monolith"). On a
# Nomad cluster this runs the real plugin; on a Drover dev agent the
# simulated nodes report it as they run the allocation (see README.md).
job "csi-hostpath" {
  type = "system"

  group "plugin" {
    task "plugin" {
      driver = "docker"

      config {
        image = "registry.k8s.io/sig-storage/hostpathplugin:v1.11.0"
        args = [
          "--drivername=csi-hostpath",
          "--v=5",
          "--endpoint=${CSI_ENDPOINT}",
          "--nodeid=node-${node.unique.name}",
        ]
        privileged = true
      }

      csi_plugin {
        id        = "hostpath"
        type      = "monolith"
        mount_dir = "/csi"
      }

      resources {
        cpu    = 100
        memory = 64
      }
    }
  }
}

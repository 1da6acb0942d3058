# A volume of the hostpath plugin, registered with
# `drover volume register volume.hcl`. The volume exists outside the
# cluster (external_id): registering it only tells the servers of it.
id          = "data"
name        = "data"
type        = "csi"
plugin_id   = "hostpath"
external_id = "data-0"

capability {
  access_mode     = "single-node-writer"
  attachment_mode = "file-system"
}

mount_options {
  fs_type = "ext4"
}

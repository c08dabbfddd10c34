# Vendored by clients/python/tools/vendor_proto.py from generated/python. DO NOT EDIT.

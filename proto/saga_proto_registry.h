/* saga_proto_registry: every service and message of proto/sagas/v1, as
 * protoc-c generated them, listed at build time from the generated headers
 * (proto/registry.cmake; the .proto files are PROTO_NAMES in
 * proto/CMakeLists.txt). The saga definitions (orchestrator/sagadef) find a
 * step's request and a saga type's input message here by name, so a new
 * .proto built like the others needs no C code to be used in a definition.
 * Static data: thread-safe.
 */
#ifndef SAGA_PROTO_REGISTRY_H
#define SAGA_PROTO_REGISTRY_H

#include <stddef.h>

#include <protobuf-c/protobuf-c.h>

/* every service descriptor (saga_proto_nservices of them) and every message
 * descriptor, nested ones included (saga_proto_nmessages), in the order of
 * PROTO_NAMES and of each generated header */
extern const ProtobufCServiceDescriptor *const saga_proto_services[];
extern const size_t saga_proto_nservices;
extern const ProtobufCMessageDescriptor *const saga_proto_messages[];
extern const size_t saga_proto_nmessages;

/* saga_proto_message is the message whose full name is `name`
 * ("sagas.v1.Order"; borrowed), or NULL (also for a NULL name). */
const ProtobufCMessageDescriptor *saga_proto_message(const char *name);

/* saga_proto_service is the service whose full name is `name`
 * ("sagas.v1.Stock"; borrowed), or NULL (also for a NULL name). */
const ProtobufCServiceDescriptor *saga_proto_service(const char *name);

#endif

#include "control/control_server.h"

#include <sys/epoll.h>

#include "transport/tcp/listener.h"
#include "transport/tcp/socket.h"

namespace hixl {

bool ServeControl(const EngineAddress &local, const std::vector<std::unique_ptr<IoWorker>> *workers,
                  PeerHandler *handler, std::string *why) {
  const int fd = tcp::ListenTcp(local, why);
  if (fd < 0) return false;
  IoWorker *home = (*workers)[0].get();
  home->Add(std::make_shared<tcp::Listener>(fd, home, workers, handler), EPOLLIN);
  return true;
}

bool IsLocalIp(const EngineAddress &addr, std::string *why) { return tcp::IsLocalIp(addr, why); }

}  // namespace hixl

#ifndef _SCE_NET_H
#define _SCE_NET_H
/* libSceNet and libSceNetCtl (public PS4/PS5 SDK names and signatures). Addresses are
 * FreeBSD's: a length byte, then a one-byte family. Failing calls return
 * SCE_NET_ERROR_BASE | errno (FreeBSD numbers) and set sce_net_errno. */
#include <_aps5_cdefs.h>
#include <stdint.h>

typedef int SceNetId;
typedef uint8_t SceNetSaFamily_t;
typedef uint32_t SceNetSocklen_t;
typedef uint16_t SceNetInPort_t;
typedef uint32_t SceNetInAddr_t;

typedef struct SceNetInAddr {
  SceNetInAddr_t s_addr;
} SceNetInAddr;
typedef struct SceNetSockaddr {
  uint8_t sa_len;
  SceNetSaFamily_t sa_family;
  char sa_data[14];
} SceNetSockaddr;
typedef struct SceNetSockaddrIn {
  uint8_t sin_len;
  SceNetSaFamily_t sin_family;
  SceNetInPort_t sin_port;
  SceNetInAddr sin_addr;
  SceNetInPort_t sin_vport;
  char sin_zero[6];
} SceNetSockaddrIn;
typedef struct SceNetIovec {
  void *iov_base;
  __aps5_size_t iov_len;
} SceNetIovec;
typedef struct SceNetMsghdr {
  void *msg_name;
  SceNetSocklen_t msg_namelen;
  SceNetIovec *msg_iov;
  int msg_iovlen;
  void *msg_control;
  SceNetSocklen_t msg_controllen;
  int msg_flags;
} SceNetMsghdr;
typedef union SceNetEpollData {
  void *ptr;
  uint32_t u32;
  int fd;
  uint64_t u64;
} SceNetEpollData;
typedef struct SceNetEpollEvent {
  uint32_t events;
  uint32_t reserved;
  uint64_t ident;
  SceNetEpollData data;
} SceNetEpollEvent;
typedef struct SceNetEtherAddr {
  uint8_t data[6];
} SceNetEtherAddr;
typedef union SceNetCtlInfo {
  uint32_t device;
  SceNetEtherAddr ether_addr;
  uint32_t mtu;
  uint32_t link;
  SceNetEtherAddr bssid;
  char ssid[33];
  uint32_t wifi_security;
  uint8_t rssi_dbm;
  uint8_t rssi_percentage;
  uint8_t channel;
  uint32_t ip_config;
  char dhcp_hostname[256];
  char pppoe_auth_name[128];
  char ip_address[16];
  char netmask[16];
  char default_route[16];
  char primary_dns[16];
  char secondary_dns[16];
  uint32_t http_proxy_config;
  char http_proxy_server[256];
  uint16_t http_proxy_port;
} SceNetCtlInfo;

#define SCE_NET_AF_INET 2
#define SCE_NET_AF_INET6 28
#define SCE_NET_SOCK_STREAM 1
#define SCE_NET_SOCK_DGRAM 2
#define SCE_NET_SOCK_RAW 3
#define SCE_NET_SOCK_DGRAM_P2P 6
#define SCE_NET_SOCK_STREAM_P2P 10
#define SCE_NET_IPPROTO_IP 0
#define SCE_NET_IPPROTO_TCP 6
#define SCE_NET_IPPROTO_UDP 17
#define SCE_NET_INADDR_ANY 0x00000000U
#define SCE_NET_INADDR_LOOPBACK 0x7f000001U
#define SCE_NET_SOL_SOCKET 0xffff
#define SCE_NET_SO_REUSEADDR 0x0004
#define SCE_NET_SO_KEEPALIVE 0x0008
#define SCE_NET_SO_BROADCAST 0x0020
#define SCE_NET_SO_LINGER 0x0080
#define SCE_NET_SO_REUSEPORT 0x0200
#define SCE_NET_SO_SNDBUF 0x1001
#define SCE_NET_SO_RCVBUF 0x1002
#define SCE_NET_SO_SNDTIMEO 0x1005 /* int, microseconds */
#define SCE_NET_SO_RCVTIMEO 0x1006 /* int, microseconds */
#define SCE_NET_SO_ERROR 0x1007
#define SCE_NET_SO_TYPE 0x1008
#define SCE_NET_SO_NBIO 0x1200
#define SCE_NET_TCP_NODELAY 1
#define SCE_NET_MSG_PEEK 0x2
#define SCE_NET_MSG_WAITALL 0x40
#define SCE_NET_MSG_DONTWAIT 0x80
#define SCE_NET_SHUT_RD 0
#define SCE_NET_SHUT_WR 1
#define SCE_NET_SHUT_RDWR 2
#define SCE_NET_EPOLLIN 0x1
#define SCE_NET_EPOLLOUT 0x2
#define SCE_NET_EPOLLERR 0x8
#define SCE_NET_EPOLLHUP 0x10
#define SCE_NET_EPOLL_CTL_ADD 1
#define SCE_NET_EPOLL_CTL_MOD 2
#define SCE_NET_EPOLL_CTL_DEL 3
#define SCE_NET_INET_ADDRSTRLEN 16
#define SCE_NET_RESOLVER_HOSTNAME_LEN_MAX 255

/* sce_net_errno values (FreeBSD's) and the matching error codes. */
#define SCE_NET_EINTR 4
#define SCE_NET_EBADF 9
#define SCE_NET_EFAULT 14
#define SCE_NET_EINVAL 22
#define SCE_NET_EAGAIN 35
#define SCE_NET_EWOULDBLOCK 35
#define SCE_NET_EINPROGRESS 36
#define SCE_NET_ENOTSOCK 38
#define SCE_NET_EAFNOSUPPORT 47
#define SCE_NET_EADDRINUSE 48
#define SCE_NET_ENOTCONN 57
#define SCE_NET_ECONNREFUSED 61
#define SCE_NET_ERROR_BASE ((int)0x80410100)
#define SCE_NET_ERROR_EINTR ((int)0x80410104)
#define SCE_NET_ERROR_EBADF ((int)0x80410109)
#define SCE_NET_ERROR_EINVAL ((int)0x80410116)
#define SCE_NET_ERROR_EAGAIN ((int)0x80410123)
#define SCE_NET_ERROR_EWOULDBLOCK ((int)0x80410123)
#define SCE_NET_ERROR_EAFNOSUPPORT ((int)0x8041012f)
#define SCE_NET_ERROR_ENOTCONN ((int)0x80410139)
#define SCE_NET_ERROR_ECONNREFUSED ((int)0x8041013d)
#define SCE_NET_ERROR_RESOLVER_ENOHOST ((int)0x804101e6)

#define SCE_NET_CTL_STATE_DISCONNECTED 0
#define SCE_NET_CTL_STATE_IPOBTAINED 3
#define SCE_NET_CTL_INFO_DEVICE 1
#define SCE_NET_CTL_INFO_ETHER_ADDR 2
#define SCE_NET_CTL_INFO_MTU 3
#define SCE_NET_CTL_INFO_LINK 4
#define SCE_NET_CTL_INFO_SSID 6
#define SCE_NET_CTL_INFO_IP_CONFIG 11
#define SCE_NET_CTL_INFO_DHCP_HOSTNAME 12
#define SCE_NET_CTL_INFO_IP_ADDRESS 14
#define SCE_NET_CTL_INFO_NETMASK 15
#define SCE_NET_CTL_INFO_DEFAULT_ROUTE 16
#define SCE_NET_CTL_INFO_PRIMARY_DNS 17
#define SCE_NET_CTL_INFO_SECONDARY_DNS 18
#define SCE_NET_CTL_ERROR_INVALID_CODE ((int)0x80412104)
#define SCE_NET_CTL_ERROR_INVALID_ADDR ((int)0x80412107)

__BEGIN_DECLS
int *sceNetErrnoLoc(void);
#define sce_net_errno (*sceNetErrnoLoc())
int sceNetInit(void);
int sceNetTerm(void);
int sceNetPoolCreate(const char *, int, int);
int sceNetPoolDestroy(int);
SceNetId sceNetSocket(const char *, int, int, int);
int sceNetSocketClose(SceNetId);
int sceNetSocketAbort(SceNetId, int);
int sceNetBind(SceNetId, const SceNetSockaddr *, SceNetSocklen_t);
int sceNetListen(SceNetId, int);
SceNetId sceNetAccept(SceNetId, SceNetSockaddr *, SceNetSocklen_t *);
int sceNetConnect(SceNetId, const SceNetSockaddr *, SceNetSocklen_t);
int sceNetSend(SceNetId, const void *, __aps5_size_t, int);
int sceNetSendto(SceNetId, const void *, __aps5_size_t, int, const SceNetSockaddr *, SceNetSocklen_t);
int sceNetSendmsg(SceNetId, const SceNetMsghdr *, int);
int sceNetRecv(SceNetId, void *, __aps5_size_t, int);
int sceNetRecvfrom(SceNetId, void *, __aps5_size_t, int, SceNetSockaddr *, SceNetSocklen_t *);
int sceNetRecvmsg(SceNetId, SceNetMsghdr *, int);
int sceNetShutdown(SceNetId, int);
int sceNetSetsockopt(SceNetId, int, int, const void *, SceNetSocklen_t);
int sceNetGetsockopt(SceNetId, int, int, void *, SceNetSocklen_t *);
int sceNetGetsockname(SceNetId, SceNetSockaddr *, SceNetSocklen_t *);
int sceNetGetpeername(SceNetId, SceNetSockaddr *, SceNetSocklen_t *);
uint16_t sceNetHtons(uint16_t);
uint32_t sceNetHtonl(uint32_t);
uint64_t sceNetHtonll(uint64_t);
uint16_t sceNetNtohs(uint16_t);
uint32_t sceNetNtohl(uint32_t);
uint64_t sceNetNtohll(uint64_t);
int sceNetInetPton(int, const char *, void *);
const char *sceNetInetNtop(int, const void *, char *, SceNetSocklen_t);
int sceNetGetMacAddress(SceNetEtherAddr *, int);
int sceNetEtherNtostr(const SceNetEtherAddr *, char *, __aps5_size_t);
int sceNetEtherStrton(const char *, SceNetEtherAddr *);
SceNetId sceNetEpollCreate(const char *, int);
int sceNetEpollControl(SceNetId, int, SceNetId, SceNetEpollEvent *);
int sceNetEpollWait(SceNetId, SceNetEpollEvent *, int, int);
int sceNetEpollDestroy(SceNetId);
SceNetId sceNetResolverCreate(const char *, int, int);
int sceNetResolverStartNtoa(SceNetId, const char *, SceNetInAddr *, int, int, int);
int sceNetResolverStartAton(SceNetId, const SceNetInAddr *, char *, int, int, int, int);
int sceNetResolverGetError(SceNetId, int *);
int sceNetResolverAbort(SceNetId, int);
int sceNetResolverDestroy(SceNetId);

int sceNetCtlInit(void);
void sceNetCtlTerm(void);
int sceNetCtlGetState(int *);
int sceNetCtlGetInfo(int, SceNetCtlInfo *);
int sceNetCtlRegisterCallback(void (*)(int, void *), void *, int *);
int sceNetCtlUnregisterCallback(int);
int sceNetCtlCheckCallback(void);
__END_DECLS
#endif

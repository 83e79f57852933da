package serverlab.webflux;

import org.springframework.boot.web.embedded.netty.NettyServerCustomizer;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;
import reactor.netty.NettyPipeline;

/** Reactor Netty settings that Spring Boot has no property for. */
@Configuration(proxyBeanMethods = false)
class NettyConfiguration {

  /** Installs {@link RequestTargetEscaper} right after the HTTP/1.1 codec of each connection. */
  @Bean
  NettyServerCustomizer requestTargetEscaper() {
    return server ->
        server.doOnChannelInit((observer, channel, remoteAddress) ->
            channel
                .pipeline()
                .addAfter(
                    NettyPipeline.HttpCodec,
                    "serverlab.requestTargetEscaper",
                    RequestTargetEscaper.INSTANCE));
  }
}

package serverlab.webflux;

import org.springframework.boot.SpringApplication;
import org.springframework.boot.autoconfigure.SpringBootApplication;
import serverlab.contract.ServerSettings;

/** Contract v1 on Spring Boot WebFlux and Reactor Netty. */
@SpringBootApplication(proxyBeanMethods = false)
public class WebfluxServer {

  /** Used verbatim in the hello body; matches display_name in server.toml. */
  public static final String DISPLAY_NAME = "Spring Boot WebFlux";

  public static void main(String[] args) {
    // Read and check WORKERS and WORKDAY_CALENDAR before anything starts: a bad setting exits
    // with one clear line, and requests never touch the calendar file.
    ServerSettings settings = ServerSettings.fromEnvironmentOrExit(DISPLAY_NAME);

    // Event-loop threads = WORKERS. Reactor Netty reads this property once, when it creates its
    // shared loop resources, so it must be set before Spring starts the server. (Its default is
    // max(availableProcessors, 4): at least 4 loops even on 1 or 2 CPUs.)
    System.setProperty("reactor.netty.ioWorkerCount", Integer.toString(settings.workers()));

    SpringApplication app = new SpringApplication(WebfluxServer.class);
    app.addInitializers(
        context -> context.getBeanFactory().registerSingleton("contract", settings.contract()));
    app.run(args);
  }
}
